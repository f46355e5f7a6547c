package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/freeport"
)

// proc is one process of the deployment, restartable after a kill -9.
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	log  *os.File
	cmd  *exec.Cmd
}

func (p *proc) start() error {
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // none outlives the soak
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	cmd := p.cmd
	go func() { _ = cmd.Wait() }()
	return nil
}

// kill9 kills the process with SIGKILL, as a crash would.
func (p *proc) kill9() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// stop ends the process with SIGTERM (a graceful stop at the soak's end).
func (p *proc) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
}

func newProc(dir, name, bin string, env []string, args ...string) (*proc, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	return &proc{name: name, bin: bin, args: args, env: env, log: f}, nil
}

// postgres is the soak's private Postgres cluster in a temp dir, so that
// it can be restarted (pg_ctl restart -m fast) without touching the
// shared server.
type postgres struct {
	bin, dir, data, port string
	asUser               []string // runuser prefix when running as root
}

// pgBinDir is the newest installed PostgreSQL's bin directory (Debian
// keeps initdb and pg_ctl off PATH).
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		return "", errors.New("no pg_ctl on PATH nor under /usr/lib/postgresql (install postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a < b
	})
	return dirs[len(dirs)-1], nil
}

func startPostgres(dir string) (*postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: bin, dir: dir, data: filepath.Join(dir, "pgdata"), port: port(freeAddr())}
	if os.Geteuid() == 0 { // initdb refuses root: run the cluster as postgres
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		pg.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := pg.run("initdb", "-D", pg.data, "-U", "postgres", "--auth=trust", "-E", "UTF8"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if out, err := pg.run("pg_ctl", "-D", pg.data, "-l", filepath.Join(dir, "postgres.log"), "-w", "-o", pg.options(dir), "start"); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	return pg, nil
}

func (pg *postgres) options(dir string) string {
	return fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off", pg.port, dir)
}

// run runs a PostgreSQL tool, its output in a file: a server pg_ctl
// starts inherits its descriptors, so a pipe would never close.
func (pg *postgres) run(tool string, args ...string) (string, error) {
	all := append(append([]string{}, pg.asUser...), append([]string{filepath.Join(pg.bin, tool)}, args...)...)
	out, err := os.CreateTemp(pg.dir, tool+"-*.out")
	if err != nil {
		return "", err
	}
	defer func() { _ = out.Close() }()
	cmd := exec.Command(all[0], all[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	text, _ := os.ReadFile(out.Name())
	return string(text), err
}

// restart is pg_ctl restart -m fast: every connection is cut. With down
// above zero the server stays stopped that long before it starts again (a
// slow restart: a loaded machine's took 1.6–1.9 s where a quiet one's takes
// 0.2 s).
func (pg *postgres) restart(down time.Duration) error {
	if down <= 0 {
		out, err := pg.run("pg_ctl", "-D", pg.data, "-l", filepath.Join(pg.dir, "postgres.log"), "-w", "-m", "fast", "restart")
		if err != nil {
			return fmt.Errorf("pg_ctl restart: %v\n%s", err, out)
		}
		return nil
	}
	if out, err := pg.run("pg_ctl", "-D", pg.data, "-w", "-m", "fast", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	time.Sleep(down)
	if out, err := pg.run("pg_ctl", "-D", pg.data, "-l", filepath.Join(pg.dir, "postgres.log"), "-w", "-o", pg.options(pg.dir), "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	return nil
}

func (pg *postgres) stop() { _, _ = pg.run("pg_ctl", "-D", pg.data, "-w", "-m", "immediate", "stop") }

func (pg *postgres) url(db string) string {
	return "postgres://postgres@127.0.0.1:" + pg.port + "/" + db + "?sslmode=disable"
}

// sentinelMaster is the master name the soak's sentinels watch.
const sentinelMaster = "soak"

// sentinel is Redis under Sentinel: a master, a replica and three
// sentinels (quorum 2), as internal/testkit's StartSentinel starts them.
type sentinel struct {
	url       string
	sentinels []string
	procs     []*exec.Cmd
}

func startSentinel(dir string) (*sentinel, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("needs redis-server and redis-sentinel (scripts/services.sh installs them)")
	}
	s := &sentinel{}
	master, replica := freeAddr(), freeAddr()
	start := func(addr string, args ...string) error {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		s.procs = append(s.procs, cmd)
		go func() { _ = cmd.Wait() }()
		return waitListening(addr, 5*time.Second)
	}
	common := func(addr string) []string {
		return []string{"--port", port(addr), "--bind", "127.0.0.1", "--dir", dir, "--dbfilename", "dump-" + port(addr) + ".rdb",
			"--save", "", "--appendonly", "no"}
	}
	// The master refuses writes once its replica is gone, so that it
	// acknowledges nothing a failover would lose
	// (docs/operators.md#redis-sentinel-and-cluster).
	if err := start(master, append(common(master), "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")...); err != nil {
		return nil, err
	}
	if err := start(replica, append(common(replica), "--replicaof", "127.0.0.1", port(master))...); err != nil {
		return nil, err
	}
	for i := range 3 {
		addr := freeAddr()
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i))
		body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %s 2\n"+
			"sentinel down-after-milliseconds %[3]s 1000\nsentinel failover-timeout %[3]s 10000\nsentinel parallel-syncs %[3]s 1\n",
			port(addr), dir, sentinelMaster, port(master))
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, err
		}
		if err := start(addr, conf, "--sentinel"); err != nil {
			return nil, err
		}
		s.sentinels = append(s.sentinels, addr)
	}
	s.url = fmt.Sprintf("redis-sentinel://%s,%s,%s/0?master_name=%s", s.sentinels[0], s.sentinels[1], s.sentinels[2], sentinelMaster)
	return s, s.waitReady()
}

func (s *sentinel) waitReady() error {
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ready := true
		for _, a := range s.sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: a})
			m, err := sc.Master(ctx, sentinelMaster).Result()
			reps, err2 := sc.Replicas(ctx, sentinelMaster).Result()
			_ = sc.Close()
			if err != nil || err2 != nil || m["num-other-sentinels"] != "2" || len(reps) != 1 || reps[0]["master-link-status"] != "ok" {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the sentinels did not see the replica and each other within 30s")
}

func (s *sentinel) master(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.sentinels[0]})
	defer func() { _ = sc.Close() }()
	a, err := sc.GetMasterAddrByName(ctx, sentinelMaster).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

// failover runs SENTINEL FAILOVER and waits until the sentinels name a new
// master and it has its replica back (the old master, demoted).
func (s *sentinel) failover(ctx context.Context) (time.Duration, error) {
	old, err := s.master(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.sentinels[0]})
	defer func() { _ = sc.Close() }()
	if err := sc.Failover(ctx, sentinelMaster).Err(); err != nil {
		return 0, fmt.Errorf("SENTINEL FAILOVER: %w", err)
	}
	for time.Since(start) < 60*time.Second {
		if m, err := s.master(ctx); err == nil && m != old {
			return time.Since(start), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, errors.New("no new master within 60s of SENTINEL FAILOVER")
}

func (s *sentinel) stop() {
	for _, p := range s.procs {
		_ = p.Process.Signal(syscall.SIGKILL)
	}
}

func freeAddr() string {
	addr, err := freeport.Addr()
	if err != nil {
		panic(err)
	}
	return addr
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func waitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s within %s", addr, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
