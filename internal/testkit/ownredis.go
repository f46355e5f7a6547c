package testkit

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/rdb"
)

// OwnRedis is a redis-server of the test's own on a free loopback port,
// keeping nothing on disk (as a Redis without persistence): a test may
// FLUSHALL it or restart it empty without touching the shared server other
// tests use. It stops at the test's cleanup.
type OwnRedis struct {
	// URL is the REDIS_URL that reaches it.
	URL  string
	Addr string
	t    testing.TB
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts an OwnRedis; it skips the test when redis-server is
// missing.
func StartRedis(t testing.TB) *OwnRedis {
	t.Helper()
	needServer(t, "redis-server")
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server (apt-get install redis-server, or run scripts/services.sh)")
	}
	r := &OwnRedis{t: t, dir: t.TempDir(), Addr: freeAddr(t)}
	r.URL = "redis://" + r.Addr + "/0"
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *OwnRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", port(r.Addr), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("testkit: start redis-server: %v", err)
	}
	waitListening(r.t, "redis-server", r.Addr, 5*time.Second)
}

func (r *OwnRedis) kill() {
	if r.cmd != nil {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// Client opens the platform's client on URL (rdb.Open), closed at cleanup.
func (r *OwnRedis) Client() redis.UniversalClient {
	r.t.Helper()
	c, err := rdb.Open(context.Background(), r.URL)
	if err != nil {
		r.t.Fatalf("testkit: open %s: %v", r.URL, err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// FlushAll runs FLUSHALL: every queued, scheduled, retrying and retained
// job is gone.
func (r *OwnRedis) FlushAll() {
	r.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer func() { _ = c.Close() }()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		r.t.Fatalf("testkit: FLUSHALL: %v", err)
	}
}

// Restart kill -9s the server and starts it again on the same port,
// empty (it persists nothing); down is how long it stays away.
func (r *OwnRedis) Restart(down time.Duration) {
	r.t.Helper()
	r.kill()
	time.Sleep(down)
	r.start()
}
