package testkit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/freeport"
	"github.com/appruntime/appruntime/internal/rdb"
)

// SentinelMaster is the master name the test Sentinels watch.
const SentinelMaster = "tkmaster"

// Sentinel is a real Redis under Sentinel on loopback ports, started by
// the test: a master, one replica and three sentinels (quorum 2, a master
// is down after 1 s). Its servers keep no data on disk and stop at the
// test's cleanup.
type Sentinel struct {
	// URL is the REDIS_URL that reaches the master through the sentinels.
	URL string
	// Sentinels are the sentinels' addresses.
	Sentinels []string
	t         testing.TB
	procs     map[string]*exec.Cmd // by address
}

// StartSentinel starts the servers and waits until the sentinels know the
// replica and each other; it skips the test when redis-server is missing.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	needServer(t, "redis-server")
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("needs redis-server for the Sentinel tests (apt-get install redis-server redis-sentinel, or run scripts/services.sh)")
	}
	dir := t.TempDir()
	s := &Sentinel{t: t, procs: map[string]*exec.Cmd{}}
	t.Cleanup(s.stopAll)
	master := freeAddr(t)
	replica := freeAddr(t)
	// The master refuses writes (NOREPLICAS) once its replica is gone, so
	// that it acknowledges nothing in the moment after a SENTINEL FAILOVER
	// promoted the replica and before the master is demoted: such a write
	// would be lost (docs/operators.md#redis-sentinel-and-cluster).
	s.start(bin, master, dir, "--save", "", "--appendonly", "no", "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
	s.start(bin, replica, dir, "--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1", port(master))
	_, mport, _ := net.SplitHostPort(master)
	for i := range 3 {
		addr := freeAddr(t)
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i))
		body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %s 2\n"+
			"sentinel down-after-milliseconds %[3]s 1000\nsentinel failover-timeout %[3]s 10000\nsentinel parallel-syncs %[3]s 1\n",
			port(addr), dir, SentinelMaster, mport)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		s.startCmd(addr, exec.Command(bin, conf, "--sentinel"))
		s.Sentinels = append(s.Sentinels, addr)
	}
	s.URL = fmt.Sprintf("redis-sentinel://%s,%s,%s/0?master_name=%s", s.Sentinels[0], s.Sentinels[1], s.Sentinels[2], SentinelMaster)
	s.waitReady(replica)
	return s
}

// Client opens the platform's client on URL (rdb.Open), closed at cleanup.
func (s *Sentinel) Client() redis.UniversalClient {
	s.t.Helper()
	c, err := rdb.Open(context.Background(), s.URL)
	if err != nil {
		s.t.Fatalf("testkit: open %s: %v", s.URL, err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// SentinelFaults are the ways Fault fails the master.
var SentinelFaults = []string{"SENTINEL FAILOVER", "kill -9"}

// Fault fails the master the way named (one of SentinelFaults) and returns
// the old master's address.
func (s *Sentinel) Fault(ctx context.Context, how string) string {
	s.t.Helper()
	if how == "kill -9" {
		return s.KillMaster(ctx)
	}
	return s.Failover(ctx)
}

// Master asks a sentinel for the current master's address.
func (s *Sentinel) Master(ctx context.Context) (string, error) {
	for _, a := range s.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a})
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err == nil && len(addr) == 2 {
			return net.JoinHostPort(addr[0], addr[1]), nil
		}
	}
	return "", fmt.Errorf("testkit: no sentinel names a master")
}

// Failover asks a sentinel to fail the master over (SENTINEL FAILOVER) and
// returns the old master's address.
func (s *Sentinel) Failover(ctx context.Context) string {
	s.t.Helper()
	old, err := s.Master(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0]})
	defer func() { _ = sc.Close() }()
	if err := sc.Failover(ctx, SentinelMaster).Err(); err != nil {
		s.t.Fatalf("testkit: SENTINEL FAILOVER: %v", err)
	}
	return old
}

// KillMaster sends SIGKILL to the current master and returns its address.
func (s *Sentinel) KillMaster(ctx context.Context) string {
	s.t.Helper()
	old, err := s.Master(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := s.procs[old]
	if cmd == nil {
		s.t.Fatalf("testkit: master %s is not one of the test's servers", old)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	delete(s.procs, old)
	return old
}

// WaitNewMaster waits until the sentinels name a master other than old.
func (s *Sentinel) WaitNewMaster(ctx context.Context, old string, within time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m, err := s.Master(ctx); err == nil && m != old {
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("testkit: no new master within %s (still %s)", within, old)
	return ""
}

func (s *Sentinel) start(bin, addr, dir string, args ...string) {
	all := append([]string{"--port", port(addr), "--bind", "127.0.0.1", "--dir", dir,
		"--dbfilename", "dump-" + port(addr) + ".rdb"}, args...)
	s.startCmd(addr, exec.Command(bin, all...))
}

func (s *Sentinel) startCmd(addr string, cmd *exec.Cmd) {
	s.t.Helper()
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("testkit: start %s: %v", cmd.Path, err)
	}
	s.procs[addr] = cmd
	waitListening(s.t, cmd.Path, addr, 5*time.Second)
}

// waitReady waits until the replica is in sync and every sentinel knows it
// and the two other sentinels: before that a failover cannot happen.
func (s *Sentinel) waitReady(replica string) {
	s.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ready := true
		for _, a := range s.Sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: a})
			m, err := sc.Master(ctx, SentinelMaster).Result()
			reps, err2 := sc.Replicas(ctx, SentinelMaster).Result()
			_ = sc.Close()
			if err != nil || err2 != nil || m["num-other-sentinels"] != "2" || len(reps) != 1 || reps[0]["master-link-status"] != "ok" {
				ready = false
				break
			}
		}
		if ready {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("testkit: the sentinels did not see replica %s and each other within 20s", replica)
}

func (s *Sentinel) stopAll() {
	for _, cmd := range s.procs {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// freeAddr returns a loopback address no one listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	if _, err := strconv.Atoi(p); err != nil {
		panic("testkit: bad address " + addr)
	}
	return p
}
