// Command appruntime-soak runs a production-like deployment on this
// machine under mixed traffic and faults, then checks from the databases
// that nothing acknowledged was lost, nothing ran twice and nothing is
// stuck (docs/operators.md#the-chaos-soak). scripts/soak builds the
// binaries and runs it.
//
// The deployment: a private PostgreSQL cluster in a temp dir (so that it
// can be restarted), the data sources' PostgreSQL (scripts/services.sh's,
// port 5433), Redis under Sentinel (a master, a replica, three sentinels),
// `appruntime migrate`, two api processes behind a round-robin client, two
// workers and one console. Faults: kill -9 of a worker every
// -worker-kill-every (restarted at once), kill -9 of one api once
// (restarted after 3 s), one SENTINEL FAILOVER, one pg_ctl restart -m fast.
//
// Its last line is soak_lost=N soak_doubled=N soak_stuck=N soak_5xx=N; it
// exits 1 when any is above 0.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/appruntime/appruntime/internal/loadseed"
	"github.com/appruntime/appruntime/internal/webhook"
)

type options struct {
	appruntime  string
	dataURL     string
	duration    time.Duration
	workerKill  time.Duration
	approvals   int
	expiries    int
	runners     int
	drain       time.Duration
	keep        bool
	sweepEvery  time.Duration
	faultsSpecs string
	pgDown      time.Duration
}

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.appruntime, "appruntime", "", "path of the appruntime binary (required)")
	fs.StringVar(&o.dataURL, "data-database", "postgres://appruntime_bench_data@127.0.0.1:5433/postgres?sslmode=disable",
		"Postgres server, not the platform's, to create the soak's data-source database on, as a role that is not a superuser (scripts/services.sh starts it)")
	fs.DurationVar(&o.duration, "d", 5*time.Minute, "how long the traffic runs (scripts/soak: SOAK_DURATION)")
	fs.DurationVar(&o.workerKill, "worker-kill-every", 30*time.Second, "kill -9 a worker (alternately) this often, restarting it at once")
	fs.IntVar(&o.approvals, "approvals", 0, "parked tasks the traffic approves (0: one per 2 s of the run)")
	fs.IntVar(&o.expiries, "expiries", 0, "parked tasks whose await expires during the run (0: one per 10 s of the run)")
	fs.IntVar(&o.runners, "runners", 3, "concurrent /run clients")
	fs.DurationVar(&o.drain, "drain", 90*time.Second, "how long to wait after the traffic for owed work to settle before checking")
	fs.DurationVar(&o.sweepEvery, "sweep-interval", 5*time.Second, "the workers' SWEEP_INTERVAL")
	fs.StringVar(&o.faultsSpecs, "faults", "worker,api,redis,postgres", "the faults to inject, of worker,api,redis,postgres")
	fs.DurationVar(&o.pgDown, "pg-down", 0, "how long the platform database stays stopped in its restart (0: pg_ctl restart)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (logs, data) after the run")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if o.appruntime == "" {
		return 2, errors.New("-appruntime is required")
	}
	if o.approvals == 0 {
		o.approvals = max(int(o.duration/(2*time.Second)), 5)
	}
	if o.expiries == 0 {
		o.expiries = max(int(o.duration/(10*time.Second)), 3)
	}
	faults := map[string]bool{}
	for _, f := range strings.Split(o.faultsSpecs, ",") {
		if f = strings.TrimSpace(f); f != "" {
			faults[f] = true
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "appruntime-soak-")
	if err != nil {
		return 2, err
	}
	if o.keep {
		fmt.Println("soak: logs and data in", dir)
	} else {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	d := &deployment{o: o, dir: dir}
	defer d.stop()
	if err := d.start(ctx); err != nil {
		return 2, err
	}
	r := &runState{d: d, stats: newStats(), acked: map[string]bool{}, ackedBy: map[string]ack{}, approved: map[string]bool{}, runSent: map[string]int{}, runOK: map[string]int{}}
	r.client = &client{apis: d.apiAddrs, http: &http.Client{Timeout: 90 * time.Second}, stats: r.stats}
	fmt.Printf("soak: traffic for %s (faults: %s)\n", o.duration, o.faultsSpecs)
	trafficCtx, endTraffic := context.WithTimeout(ctx, o.duration)
	var wg sync.WaitGroup
	r.traffic(trafficCtx, &wg)
	d.faults(trafficCtx, faults, &wg)
	wg.Wait()
	endTraffic()
	if ctx.Err() != nil {
		return 2, ctx.Err()
	}
	fmt.Printf("soak: traffic done; waiting up to %s for owed work to settle\n", o.drain)
	inv, err := r.check(ctx)
	if err != nil {
		return 2, err
	}
	fmt.Println()
	r.stats.table(os.Stdout)
	fmt.Println()
	d.faultLog.print(os.Stdout)
	fmt.Println()
	inv.print(os.Stdout)
	for _, s := range r.stats.samples {
		fmt.Println("5xx:", s)
	}
	for _, s := range r.stats.cuts {
		fmt.Println("cut:", s)
	}
	fmt.Printf("soak_lost=%d soak_doubled=%d soak_stuck=%d soak_5xx=%d\n", inv.lost, inv.doubled, inv.stuck, r.stats.fiveXX)
	if inv.lost+inv.doubled+inv.stuck+r.stats.fiveXX > 0 {
		if !o.keep {
			fmt.Println("soak: rerun with -keep (scripts/soak: SOAK_KEEP=1) to keep the processes' logs")
		}
		return 1, nil
	}
	return 0, nil
}

// deployment is the processes of the soak and the servers they use.
type deployment struct {
	o          options
	dir        string
	pg         *postgres
	redis      *sentinel
	dbURL      string
	dataURL    string
	dataName   string // the data source's database, this run's own
	apiAddrs   []string
	apis       []*proc
	workers    []*proc
	console    *proc
	hook       *receiver
	tools      *toolEndpoint
	fx         fixture
	faultLog   faultLog
	secretsKey []byte

	// killedAPI is the address of the api killed with kill -9 and when
	// (under faultLog.mu), for the writes it acknowledged just before.
	killedAPI   string
	killedAPIAt time.Time
}

func (d *deployment) start(ctx context.Context) error {
	var err error
	if d.pg, err = startPostgres(d.dir); err != nil {
		return err
	}
	if d.dbURL, err = loadseed.FreshDatabase(ctx, d.pg.url("postgres"), "soak"); err != nil {
		return err
	}
	// The data sources' server is shared: a database of this run's own, so
	// that soaks running side by side (other worktrees) never drop each
	// other's.
	d.dataName = fmt.Sprintf("appruntime_soak_data_%d", os.Getpid())
	if d.dataURL, err = loadseed.FreshDatabase(ctx, d.o.dataURL, d.dataName); err != nil {
		return fmt.Errorf("the data sources' server (scripts/services.sh starts it on 5433): %w", err)
	}
	if d.redis, err = startSentinel(d.dir); err != nil {
		return err
	}
	d.hook, err = startReceiver("whsec_soak_0123456789abcdefghijklmnopqrstuvwxyz")
	if err != nil {
		return err
	}
	if d.tools, err = startToolEndpoint(); err != nil {
		return err
	}
	d.secretsKey = []byte("appruntime-soak-key-0123456789ab")
	key := base64.StdEncoding.EncodeToString(d.secretsKey)
	d.apiAddrs = []string{freeAddr(), freeAddr()}
	consoleAddr := freeAddr()
	env := append(os.Environ(), "DATABASE_URL="+d.dbURL, "REDIS_URL="+d.redis.url, "SECRETS_KEY="+key,
		"SESSION_KEYS=soak:"+key, "CONSOLE_SESSION_KEY="+key, "LOG_LEVEL=warn", "PUBLIC_API_URL=http://"+d.apiAddrs[0], "CONSOLE_ADDR="+consoleAddr,
		"DATASOURCE_ALLOW_CIDRS=127.0.0.0/8,::1/128", "OUTBOUND_ALLOW_CIDRS=127.0.0.0/8",
		"SURFACE_RATE_PER_SECOND=100000", "SURFACE_BURST=100000", "SWEEP_INTERVAL="+d.o.sweepEvery.String())
	if out, err := command(d.o.appruntime, env, "migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v\n%s", err, out)
	}
	d.fx, err = seed(ctx, d.dbURL, d.dataURL, d.secretsKey, d.hook.url, d.hook.secret, d.tools.url,
		d.o.approvals, d.o.expiries, max(int(d.o.duration/(500*time.Millisecond)), 10), d.o.runners, d.o.duration)
	if err != nil {
		return err
	}
	for i, addr := range d.apiAddrs {
		p, err := newProc(d.dir, fmt.Sprintf("api-%d", i), d.o.appruntime, append(slices.Clip(env), "API_ADDR="+addr), "api")
		if err != nil {
			return err
		}
		d.apis = append(d.apis, p)
	}
	for i := range 2 {
		p, err := newProc(d.dir, fmt.Sprintf("worker-%d", i), d.o.appruntime, env, "worker")
		if err != nil {
			return err
		}
		d.workers = append(d.workers, p)
	}
	if d.console, err = newProc(d.dir, "console", d.o.appruntime, env, "console"); err != nil {
		return err
	}
	for _, p := range append(append(append([]*proc{}, d.apis...), d.workers...), d.console) {
		if err := p.start(); err != nil {
			return err
		}
	}
	return waitReady(append(d.readyURLs(), "http://"+consoleAddr+"/readyz")...)
}

func (d *deployment) readyURLs() []string {
	urls := make([]string, len(d.apiAddrs))
	for i, a := range d.apiAddrs {
		urls[i] = "http://" + a + "/readyz"
	}
	return urls
}

func (d *deployment) stop() {
	for _, p := range append(append(append([]*proc{}, d.apis...), d.workers...), d.console) {
		if p != nil {
			p.stop()
		}
	}
	time.Sleep(500 * time.Millisecond)
	for _, p := range append(append(append([]*proc{}, d.apis...), d.workers...), d.console) {
		if p != nil {
			p.kill9()
		}
	}
	if d.redis != nil {
		d.redis.stop()
	}
	if d.pg != nil {
		d.pg.stop()
	}
	if d.hook != nil {
		_ = d.hook.srv.Close()
	}
	if d.tools != nil {
		_ = d.tools.srv.Close()
	}
	if d.dataURL != "" && !d.o.keep {
		_ = loadseed.DropDatabase(context.Background(), d.o.dataURL, d.dataName)
	}
}

// faultLog is the faults injected, in order.
type faultLog struct {
	mu     sync.Mutex
	faults []string
}

func (f *faultLog) add(at time.Duration, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fmt.Sprintf("%7s  %s", at.Round(100*time.Millisecond), fmt.Sprintf(format, args...)))
}

func (f *faultLog) print(w io.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "faults injected: %d\n", len(f.faults))
	for _, l := range f.faults {
		fmt.Fprintln(w, "  "+l)
	}
}

// faults injects the faults of the run: a worker killed every
// workerKill, one api at a quarter of the run, the Redis failover at half,
// the Postgres restart at three quarters.
func (d *deployment) faults(ctx context.Context, which map[string]bool, wg *sync.WaitGroup) {
	start := time.Now()
	at := func(frac float64, name string, f func()) {
		if !which[name] {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(float64(d.o.duration) * frac)):
				f()
			}
		}()
	}
	if which["worker"] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d.o.workerKill)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				w := d.workers[i%len(d.workers)]
				w.kill9()
				time.Sleep(200 * time.Millisecond)
				if err := w.start(); err != nil {
					d.faultLog.add(time.Since(start), "%s restart failed: %v", w.name, err)
					continue
				}
				d.faultLog.add(time.Since(start), "kill -9 %s, restarted", w.name)
			}
		}()
	}
	at(0.25, "api", func() {
		a := d.apis[1]
		a.kill9()
		d.faultLog.mu.Lock()
		d.killedAPI, d.killedAPIAt = d.apiAddrs[1], time.Now()
		d.faultLog.mu.Unlock()
		d.faultLog.add(time.Since(start), "kill -9 %s", a.name)
		time.Sleep(3 * time.Second)
		if err := a.start(); err != nil {
			d.faultLog.add(time.Since(start), "%s restart failed: %v", a.name, err)
			return
		}
		err := waitReady(d.readyURLs()[1])
		d.faultLog.add(time.Since(start), "%s restarted (ready: %v)", a.name, err == nil)
	})
	at(0.5, "redis", func() {
		took, err := d.redis.failover(context.Background())
		if err != nil {
			d.faultLog.add(time.Since(start), "redis failover failed: %v", err)
			return
		}
		d.faultLog.add(time.Since(start), "SENTINEL FAILOVER: new master named after %s", took.Round(time.Millisecond))
	})
	at(0.75, "postgres", func() {
		t0 := time.Now()
		if err := d.pg.restart(d.o.pgDown); err != nil {
			d.faultLog.add(time.Since(start), "postgres restart failed: %v", err)
			return
		}
		d.faultLog.add(time.Since(start), "pg_ctl restart -m fast (platform database), back after %s", time.Since(t0).Round(time.Millisecond))
	})
}

// receiver is the agent's resume webhook: it verifies each delivery's
// Standard Webhooks signature and counts verified deliveries by event id.
type receiver struct {
	url, secret string
	srv         *http.Server
	mu          sync.Mutex
	byEvent     map[string]int
	bad         int
}

func startReceiver(secret string) (*receiver, error) {
	keys, err := webhook.ParseStoredKeyring([]byte(secret))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook", secret: secret, byEvent: map[string]int{}}
	r.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		ok := false
		for _, s := range keys.Live(time.Now()) {
			if s.Verify(req.Header, body, time.Now(), webhook.DefaultTolerance) == nil {
				ok = true
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if !ok {
			r.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.byEvent[req.Header.Get(webhook.HeaderID)]++
	})}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) count(eventID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byEvent[eventID]
}

func waitReady(urls ...string) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, u := range urls {
		for {
			res, err := http.Get(u)
			if err == nil {
				_ = res.Body.Close()
				if res.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready within 60s: %v", u, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func command(name string, env []string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = env
	return c
}
