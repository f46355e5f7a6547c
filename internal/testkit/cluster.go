package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/freeport"
	"github.com/appruntime/appruntime/internal/rdb"
)

// Cluster is a real three-master Redis Cluster on loopback ports, made
// from Debian's redis-server with redis-cli --cluster create: the shared
// one has no replicas, a private one (StartCluster) may have one per master.
// Its servers keep no data on disk.
type Cluster struct {
	// URL is the REDIS_URL that reaches it through its seeds.
	URL string
	// Nodes are every node's address (a master's and its replicas').
	Nodes []string
	procs map[string]*exec.Cmd // each node's redis-server
	dir   string               // the nodes' files: their configuration and logs
}

// Log is the log of the node at addr (its last 4 KiB), for a test's
// failure message.
func (c *Cluster) Log(addr string) string {
	b, err := os.ReadFile(filepath.Join(c.dir, "log-"+port(addr)))
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-4096):])
}

// StartCluster starts a private cluster of three masters, each with
// replicas replicas, for a test that stops its nodes (Kill); it stops with
// the test. It skips the test when redis-server or redis-cli is missing.
func StartCluster(t testing.TB, replicas int) *Cluster {
	t.Helper()
	needClusterBinaries(t)
	c, err := startCluster(replicas)
	if err != nil {
		t.Fatalf("testkit: start a Redis Cluster: %v", err)
	}
	t.Cleanup(c.stop)
	return c
}

// Kill stops the node at addr with SIGKILL, as a crashed machine would.
func (c *Cluster) Kill(addr string) error {
	p, ok := c.procs[addr]
	if !ok {
		return fmt.Errorf("testkit: no node %s", addr)
	}
	if err := p.Process.Kill(); err != nil {
		return err
	}
	_ = p.Wait()
	delete(c.procs, addr)
	return nil
}

func (c *Cluster) stop() {
	for _, p := range c.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
}

func needClusterBinaries(t testing.TB) {
	t.Helper()
	needServer(t, "a Redis Cluster")
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s for the Redis Cluster tests (apt-get install redis-server redis-tools, or run scripts/services.sh)", bin)
		}
	}
}

var (
	clusterOnce sync.Once
	cluster     *Cluster
	clusterErr  error
)

// SharedCluster returns the test binary's cluster, started on first use
// (about 1-2 s) and shared by every test of the binary, which keep apart by
// their key prefixes (ClusterRedis). Its servers die with the test binary.
// It skips the test when redis-server or redis-cli is missing.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	needClusterBinaries(t)
	clusterOnce.Do(func() { cluster, clusterErr = startCluster(0) })
	if clusterErr != nil {
		t.Fatalf("testkit: start a Redis Cluster: %v", clusterErr)
	}
	return cluster
}

// Client opens the platform's client on the cluster's URL (rdb.Open),
// closed at the test's cleanup.
func (c *Cluster) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	client, err := rdb.Open(context.Background(), c.URL)
	if err != nil {
		t.Fatalf("testkit: open %s: %v", c.URL, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// ClusterRedis is a RedisEnv on the shared cluster: a client of the
// test's own, a fresh key prefix and queue names.
func ClusterRedis(t testing.TB) RedisEnv {
	t.Helper()
	return RedisOn(SharedCluster(t).Client(t))
}

// spawn starts commands from one goroutine locked to its OS thread for the
// life of the binary, so that their parent-death signal (SIGKILL) comes
// when the test binary exits, not when some runtime thread does.
var (
	spawnOnce sync.Once
	spawns    chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the binary
			for r := range spawns {
				r.done <- r.cmd.Start()
			}
		}()
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	spawns <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

func startCluster(replicas int) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "tk-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{procs: map[string]*exec.Cmd{}, dir: dir}
	fail := func(err error) (*Cluster, error) {
		c.stop()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for range 3 * (1 + replicas) {
		addr, err := freeport.Addr()
		if err != nil {
			return fail(err)
		}
		bus, err := freeport.Addr()
		if err != nil {
			return fail(err)
		}
		p := port(addr)
		cmd := exec.Command("redis-server", "--port", p, "--bind", "127.0.0.1", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-port", port(bus), "--cluster-config-file", "nodes-"+p+".conf",
			"--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no", "--dbfilename", "dump-"+p+".rdb", "--repl-diskless-sync-delay", "0",
			"--logfile", filepath.Join(dir, "log-"+p))
		if err := spawn(cmd); err != nil {
			return fail(fmt.Errorf("start redis-server: %w", err))
		}
		c.procs[addr] = cmd
		if err := waitAnswering(addr, 5*time.Second); err != nil {
			return fail(err)
		}
		c.Nodes = append(c.Nodes, addr)
	}
	args := append([]string{"--cluster", "create"}, c.Nodes...)
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("redis-cli --cluster create: %v: %s", err, out))
	}
	if err := waitClusterOK(c.Nodes, 20*time.Second); err != nil {
		return fail(err)
	}
	// A replica that never synced with its master would not be elected
	// in its place: its data's age is unknown.
	if err := waitReplicasSynced(c.Nodes, 20*time.Second); err != nil {
		return fail(err)
	}
	c.URL = "redis-cluster://" + strings.Join(c.Nodes, ",")
	return c, nil
}

func waitAnswering(addr string, within time.Duration) error {
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = client.Close() }()
	deadline := time.Now().Add(within)
	for {
		err := client.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s does not answer within %s: %w", addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReplicasSynced waits until every replica among nodes has its link to
// its master up.
func waitReplicasSynced(nodes []string, within time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for _, a := range nodes {
		client := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, err := client.Info(ctx, "replication").Result()
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				_ = client.Close()
				return fmt.Errorf("the replica %s has not synced with its master within %s: %v %s", a, within, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = client.Close()
	}
	return nil
}

// waitClusterOK waits until every node says the cluster is ok, knows every
// other node and serves all 16384 slots: before that a command may meet
// CLUSTERDOWN.
func waitClusterOK(nodes []string, within time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(within)
	want := []string{"cluster_state:ok", "cluster_slots_ok:16384", fmt.Sprintf("cluster_known_nodes:%d", len(nodes))}
	last := ""
	for time.Now().Before(deadline) {
		ok := true
		for _, a := range nodes {
			client := redis.NewClient(&redis.Options{Addr: a})
			info, err := client.ClusterInfo(ctx).Result()
			_ = client.Close()
			for _, w := range want {
				if err != nil || !strings.Contains(info, w) {
					ok, last = false, a+": "+info
					break
				}
			}
			if !ok {
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the cluster is not ok within %s: %s", within, last)
}
