// Command appruntime-bench measures the runtime verbs against a raw
// baseline in the same run: /read of a one-row op and /write of one row on
// the `appruntime api` process, and a minimal Fiber handler doing the same
// SELECT and UPDATE through a pgx pool, under the same load generator and
// concurrency; and a /read lookup (an http_calls op through the gateway) of
// a loopback upstream this command serves, against a bare Fiber handler
// proxying the same upstream with net/http. Each verb is measured in
// alternating rounds (baseline, then appruntime); it prints per verb and
// server the median throughput and CPU per request of the rounds, p50/p99,
// each round's ratio, the api process's peak memory, and a last line
// "read_ratio=… write_ratio=… lookup_ratio=…" whose ratios are the medians
// of the rounds' ratios.
// Then it floods the api with concurrent anonymous uploads (200 × 4 MiB by
// default) and prints the api's peak memory during the flood.
//
// scripts/bench builds the binaries and runs it; `appruntime-bench baseline`
// is the baseline server it starts.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	_ "net/http/pprof" // the baseline's -debug-addr
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/freeport"
	"github.com/appruntime/appruntime/internal/loadseed"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "baseline" {
		if err := runBaseline(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "rawdrain" {
		if err := runRawDrain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "rawdrain:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// rows is how many rows the benchmark table holds; each request picks one at
// random so that concurrent writes do not queue on one row lock.
const rows = 10000

// poolConns is the data-source pool size of both servers, so that neither
// has more database connections than the other.
const poolConns = 16

type options struct {
	appruntime  string // path of the appruntime binary
	compare     string // path of a second appruntime binary measured in the same rounds; empty: none
	adminURL    string // a Postgres URL with the right to create databases
	dataURL     string // the same on the data source's server (never the platform's)
	dbName      string // the database the bench drops and creates there
	redisURL    string
	concurrency int
	warmup      time.Duration
	duration    time.Duration
	rounds      int
	uploads     int // concurrent anonymous uploads of the flood phase; 0 skips it
	uploadSize  int
	verbs       verbSet // the verb phases to measure; none: only the /run phase
	run         runOptions
	reviewTasks int // parked tasks of the review queue phase; 0 skips it
	docBombs    int // bombs of each kind previewed at once in the document phase; 0 skips it
	csvFiles    int // large CSV files looked up at once in the CSV phase; 0 skips it
	csvCacheMB  int // the worker's CSV_CACHE_MB
	reviewers   int
	workerDebug string // DEBUG_ADDR of the worker process (pprof); empty: none
	baseDebug   string // pprof address of the baseline process; empty: none
}

func run(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.appruntime, "appruntime", "", "path of the appruntime binary (required)")
	fs.StringVar(&o.compare, "compare", "", "path of a second appruntime binary (another build) whose api runs beside the first and is measured in the same rounds, after it; prints its ratios and its throughput over the first's per round")
	fs.StringVar(&o.adminURL, "database", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "Postgres server to create the bench database on")
	fs.StringVar(&o.dataURL, "data-database", "postgres://appruntime_bench_data@127.0.0.1:5433/postgres?sslmode=disable", "Postgres server, not the platform's, to create the bench's data-source database on as a role that is not a superuser (scripts/services.sh starts it)")
	fs.StringVar(&o.dbName, "dbname", "appruntime_bench", "the database to (re)create for the run")
	fs.StringVar(&o.redisURL, "redis", "redis://127.0.0.1:6379/15", "Redis for the api process (a database of its own)")
	fs.IntVar(&o.concurrency, "c", 64, "concurrent connections")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up per measurement")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "measurement time per verb and server")
	fs.IntVar(&o.rounds, "rounds", 5, "alternating baseline/appruntime rounds the measurement time is split into; each ratio is their median")
	fs.IntVar(&o.uploads, "uploads", 200, "concurrent anonymous uploads of the memory phase (0 skips it)")
	fs.IntVar(&o.uploadSize, "upload-size", 4<<20, "bytes each anonymous upload sends")
	o.verbs = allVerbs()
	fs.Var(&o.verbs, "verbs", "the verbs to measure, of read,write,lookup (true: all; false: none, only the /run phase); the upload flood runs with any")
	fs.IntVar(&o.run.trips, "run-trips", 1000, "sequential /run and raw round trips each (0 skips the /run phase)")
	fs.IntVar(&o.run.jobs, "run-jobs", 10000, "the fewest jobs per drain of the /run phase (more when the fastest drain would last under 2s)")
	fs.StringVar(&o.workerDebug, "worker-debug-addr", "", "serve the worker process's pprof on this loopback address (DEBUG_ADDR)")
	fs.StringVar(&o.baseDebug, "baseline-debug-addr", "", "serve the baseline process's pprof on this loopback address, to compare its profile with the api's (DEBUG_ADDR)")
	fs.IntVar(&o.run.workers, "run-workers", 16, "concurrency of the worker's lookup queue and of the raw server")
	fs.IntVar(&o.run.servers, "worker-servers", 4, "asynq servers the worker shares its lookup concurrency among (WORKER_SERVERS_LOOKUP)")
	fs.DurationVar(&o.run.checkInterval, "check-interval", config.DefaultTaskCheckInterval, "asynq task check interval of the worker and of the raw server")
	fs.IntVar(&o.docBombs, "doc-bombs", 4, "PDF and XLSX bombs of each kind previewed at once in the document phase (0 skips it)")
	fs.IntVar(&o.csvFiles, "csv-files", 6, "49 MiB CSV files looked up at once through /run in the CSV phase, as soon as the worker starts (0 skips it)")
	fs.IntVar(&o.csvCacheMB, "csv-cache-mb", 256, "the worker's CSV_CACHE_MB")
	fs.IntVar(&o.reviewTasks, "review-tasks", 100000, "parked tasks of the review queue phase (0 skips it)")
	fs.IntVar(&o.reviewers, "reviewers", 16, "concurrent reviewers of the review queue phase")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags take -name=value)", fs.Arg(0))
	}
	if o.rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	o.run.rounds = o.rounds
	if o.appruntime == "" {
		return errors.New("-appruntime is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dbURL, err := loadseed.FreshDatabase(ctx, o.adminURL, o.dbName)
	if err != nil {
		return err
	}
	// The bench table is a data source, which is never on the platform's
	// server and never reached as a superuser.
	dataURL, err := loadseed.FreshDatabase(ctx, o.dataURL, o.dbName+"_data")
	if err != nil {
		return err
	}
	key := base64.StdEncoding.EncodeToString([]byte("appruntime-bench-key-0123456789ab"))
	apiAddr, baseAddr := freeAddr(), freeAddr()
	upstreamURL, err := serveUpstream(ctx)
	if err != nil {
		return err
	}
	// The lookup is measured for throughput, so the per-surface rate limit
	// (5/s on the one surface of the bench) is raised; it is still checked
	// in Redis on every call.
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+o.redisURL, "SECRETS_KEY="+key,
		"SESSION_KEYS=bench:"+key, "API_ADDR="+apiAddr, "LOG_LEVEL=error", "PUBLIC_API_URL=http://"+apiAddr,
		"DATASOURCE_ALLOW_CIDRS=127.0.0.0/8,::1/128", "OUTBOUND_ALLOW_CIDRS=127.0.0.0/8",
		"SURFACE_RATE_PER_SECOND=1000000", "SURFACE_BURST=1000000", "LOOKUP_CONCURRENCY="+strconv.Itoa(o.concurrency),
		"RUN_CONCURRENCY="+strconv.Itoa(o.concurrency),
		// One workspace is the bench's whole load: its share of the lookup
		// queue is all of it, so the CSV phase's lookups all start at once.
		"WORKER_SHARE_LOOKUP="+strconv.Itoa(o.run.workers))
	if out, err := command(ctx, o.appruntime, env, "migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v\n%s", err, out)
	}
	fx, err := seed(ctx, dbURL, dataURL, upstreamURL, []byte("appruntime-bench-key-0123456789ab"), o.csvFiles)
	if err != nil {
		return err
	}
	if o.csvFiles > 0 && o.run.trips > 0 {
		if err := uploadCSVFiles(ctx, dbURL, []byte("appruntime-bench-key-0123456789ab"), fx.taskID, o.csvFiles); err != nil {
			return err
		}
	}

	// The api alone serves metrics (the worker, on the same environment,
	// would bind the same address): its Go collector's malloc count gives
	// the allocations per request.
	metricsAddr := freeAddr()
	api := command(ctx, o.appruntime, append(slices.Clone(env), "METRICS_ADDR="+metricsAddr), "api")
	procs := []*exec.Cmd{api}
	var other *exec.Cmd
	otherAddr := ""
	if o.compare != "" {
		// The second build serves the same platform and data source; a
		// session minted on one is valid on the other.
		otherAddr = freeAddr()
		other = command(ctx, o.compare, replaceEnv(env, "API_ADDR", otherAddr), "api")
		procs = append(procs, other)
	}
	base := command(ctx, os.Args[0], os.Environ(), "baseline", "-addr", baseAddr, "-dsn", fx.dataDSN, "-upstream", upstreamURL, "-debug-addr", o.baseDebug)
	// The worker starts with the /run phase: its asynq servers poll Redis
	// every task check interval, CPU the verbs' phases need not share.
	startWorker := func() (*exec.Cmd, error) {
		w := command(ctx, o.appruntime, append(env, "WORKER_QUEUES=lookup", "WORKER_CONCURRENCY_LOOKUP="+strconv.Itoa(o.run.workers),
			"WORKER_SERVERS_LOOKUP="+strconv.Itoa(o.run.servers),
			"WORKER_TASK_CHECK_INTERVAL="+o.run.checkInterval.String(), "DEBUG_ADDR="+o.workerDebug, "CSV_CACHE_MB="+strconv.Itoa(o.csvCacheMB)), "worker")
		w.Stdout, w.Stderr = os.Stderr, os.Stderr
		return w, w.Start()
	}
	for _, p := range append(procs, base) {
		p.Stdout, p.Stderr = os.Stderr, os.Stderr
		if err := p.Start(); err != nil {
			return err
		}
		defer func() { _ = p.Process.Signal(syscall.SIGTERM); _ = p.Wait() }()
	}
	ready := []string{"http://" + apiAddr + "/readyz", "http://" + baseAddr + "/healthz"}
	if other != nil {
		ready = append(ready, "http://"+otherAddr+"/readyz")
	}
	if err := waitReady(ready...); err != nil {
		return err
	}
	token, err := mint("http://"+apiAddr, fx.hostToken, fx.stepID)
	if err != nil {
		return err
	}
	if o.docBombs > 0 {
		// First, so that the api's peak RSS is its own, not an earlier phase's.
		pdfs, sheets, err := seedBombs(ctx, dbURL, fx.taskID, o.docBombs)
		if err != nil {
			return err
		}
		if err := docPhase(apiAddr, api.Process.Pid, token, pdfs, sheets); err != nil {
			return err
		}
	}
	if len(o.verbs) == 0 {
		line, err := withReview(ctx, o, apiAddr, dbURL, api.Process.Pid, "")
		if err != nil {
			return err
		}
		return finishWithRun(ctx, o, apiAddr, startWorker, fx, line)
	}

	fmt.Printf("appruntime bench: %d connections, %s per verb and server in %d alternating rounds (after %s warm-up), %d-row table\n",
		o.concurrency, o.duration, o.rounds, o.warmup, rows)
	fmt.Printf("req/s, server CPU/req, Postgres CPU/req and each ratio are the median of the rounds (a round: baseline then appruntime, each %s);\n"+
		"p50/p99 are over every request of the rounds; Postgres CPU is every postgres process's on this machine (the data source's and the platform's)\n\n",
		o.duration/time.Duration(o.rounds))
	fmt.Printf("Redis/req and scripts/req are counted, not sampled, over every request of the rounds: the Redis server's commands, a script's\n" +
		"own included, and its scripts run (EVALSHA, EVAL, FCALL) (INFO commandstats, server-wide: run the bench alone);\n" +
		"docs/performance.md#counted-costs has the round trips and Postgres statements per verb\n\n")
	fmt.Printf("allocs/req: the appruntime api's heap allocations per request over the rounds (go_memstats_mallocs_total of its metrics,\n" +
		"less a scrape's own); platform stmt/tx and source stmt/tx: the statements/transactions per request the api sent the platform's\n" +
		"Postgres (appruntime_platform_db_*) and the data source (appruntime_datasource_query_duration_seconds), counted over the rounds,\n" +
		"a write's settles included (the baseline sends its data source one statement per request and no transaction)\n\n")
	fmt.Printf("%-6s %-10s %10s %9s %9s %14s %12s %9s %11s %10s %11s %11s   %s\n", "verb", "server", "req/s", "p50", "p99", "server CPU/req", "Postgres/req", "Redis/req", "scripts/req", "allocs/req", "platform", "source", "ratio per round")
	redisOpt, err := redis.ParseURL(o.redisURL)
	if err != nil {
		return err
	}
	counted := redis.NewClient(redisOpt)
	defer counted.Close()
	type target struct {
		server, addr, path, token string
		body                      func(r *rand.Rand) []byte
		pid                       int
	}
	verbs := []struct {
		verb              string
		baseline, project target
	}{ // the compare build, when set, is measured as project is, on its own address
		{"read",
			target{"baseline", baseAddr, "/read", "", func(r *rand.Rand) []byte { return fmt.Appendf(nil, `{"id":%d}`, 1+r.IntN(rows)) }, base.Process.Pid},
			target{"appruntime", apiAddr, "/api/app-runtime/read", token, func(r *rand.Rand) []byte {
				return fmt.Appendf(nil, `{"op":"get_item","payload":{"filters":{"id":%d}}}`, 1+r.IntN(rows))
			}, api.Process.Pid}},
		{"write",
			target{"baseline", baseAddr, "/write", "", func(r *rand.Rand) []byte {
				return fmt.Appendf(nil, `{"id":%d,"n":%d}`, 1+r.IntN(rows), r.IntN(1000))
			}, base.Process.Pid},
			target{"appruntime", apiAddr, "/api/app-runtime/write", token, func(r *rand.Rand) []byte {
				return fmt.Appendf(nil, `{"op":"set_n","payload":{"row":{"id":%d,"n":%d}}}`, 1+r.IntN(rows), r.IntN(1000))
			}, api.Process.Pid}},
		{"lookup",
			target{"baseline", baseAddr, "/lookup", "", func(r *rand.Rand) []byte { return fmt.Appendf(nil, `{"id":%d}`, 1+r.IntN(rows)) }, base.Process.Pid},
			target{"appruntime", apiAddr, "/api/app-runtime/read", token, func(r *rand.Rand) []byte {
				return fmt.Appendf(nil, `{"op":"lookup_item","payload":{"id":%d}}`, 1+r.IntN(rows))
			}, api.Process.Pid}},
	}
	ratio := map[string]float64{}
	for _, v := range verbs {
		if !o.verbs[v.verb] {
			continue
		}
		// Alternating rounds cancel the drift of a shared machine's speed,
		// which would otherwise land on whichever server ran second, and
		// the median of their ratios is not moved by one round that another
		// process on the machine slowed down.
		targets := []target{v.baseline, v.project}
		if other != nil {
			second := v.project
			second.server, second.addr, second.pid = "compare", otherAddr, other.Process.Pid
			targets = append(targets, second)
		}
		measured := make([]measurement, len(targets))
		for i, t := range targets {
			if _, err := load(ctx, t.addr, t.path, t.token, t.body, o.concurrency, o.warmup); err != nil {
				return fmt.Errorf("%s %s warm-up: %w", t.server, v.verb, err)
			}
			measured[i].server = t.server
		}
		for range o.rounds {
			for i, t := range targets {
				cpu0, err := cpuTime(t.pid)
				if err != nil {
					return err
				}
				db0 := postgresCPU()
				redis0, err := redisCommands(ctx, counted)
				if err != nil {
					return err
				}
				var api0 apiCounters
				if t.server == "appruntime" {
					if api0, err = roundCounters(metricsAddr); err != nil {
						return err
					}
				}
				m, err := load(ctx, t.addr, t.path, t.token, t.body, o.concurrency, o.duration/time.Duration(o.rounds))
				if err != nil {
					return fmt.Errorf("%s %s: %w", t.server, v.verb, err)
				}
				cpu1, err := cpuTime(t.pid)
				if err != nil {
					return err
				}
				redis1, err := redisCommands(ctx, counted)
				if err != nil {
					return err
				}
				m.cpu, m.dbCPU, m.redis = cpu1-cpu0, postgresCPU()-db0, redis1.sub(redis0)
				if t.server == "appruntime" {
					api1, err := scrapeAPI(metricsAddr)
					if err != nil {
						return err
					}
					m.api = api1.sub(api0)
				}
				measured[i].add(m)
			}
		}
		rounds := roundRatios(measured[1].rounds, measured[0].rounds)
		for i, m := range measured {
			p50, p99 := m.percentiles()
			perRound := ""
			switch i {
			case 1:
				perRound = formatRatios(rounds)
			case 2:
				vsFirst := roundRatios(m.rounds, measured[1].rounds)
				perRound = fmt.Sprintf("%s (over appruntime: %s, median %.3f)", formatRatios(roundRatios(m.rounds, measured[0].rounds)),
					formatRatios(vsFirst), median(vsFirst))
			}
			commands, scripts := m.redisPerRequest()
			allocs, platform, source := "-", "-", "-"
			if m.server == "appruntime" {
				allocs = fmt.Sprintf("%.0f", m.apiPerRequest(func(c apiCounters) int64 { return c.mallocs }))
				platform = fmt.Sprintf("%.2f/%.2f", m.apiPerRequest(func(c apiCounters) int64 { return c.platformStatements }),
					m.apiPerRequest(func(c apiCounters) int64 { return c.platformTransactions }))
				source = fmt.Sprintf("%.2f/%.2f", m.apiPerRequest(func(c apiCounters) int64 { return c.sourceStatements }),
					m.apiPerRequest(func(c apiCounters) int64 { return c.sourceTransactions }))
			}
			fmt.Printf("%-6s %-10s %10.0f %9s %9s %12.1fµs %10.1fµs %9.2f %11.2f %10s %11s %11s   %s\n", v.verb, m.server, m.medianRPS(), ms(p50), ms(p99),
				m.medianCPUPerRequest(), m.medianDBCPUPerRequest(), commands, scripts, allocs, platform, source, perRound)
		}
		ratio[v.verb] = median(rounds)
	}
	peak, err := peakRSS(api.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("\nappruntime api peak memory (VmHWM): %.1f MiB\n", float64(peak)/(1<<20))
	if o.uploads > 0 {
		if err := floodPhase(apiAddr, api.Process.Pid, o.uploads, o.uploadSize); err != nil {
			return err
		}
	}
	ratios := ratioLine(ratio)
	if ratios, err = withReview(ctx, o, apiAddr, dbURL, api.Process.Pid, ratios); err != nil {
		return err
	}
	return finishWithRun(ctx, o, apiAddr, startWorker, fx, ratios)
}

// finishWithRun runs the /run phase and prints the last line: the verbs'
// ratios (when measured) and run_overhead_ms.
// withReview runs the review queue phase when it is asked for and appends
// its summary to line.
func withReview(ctx context.Context, o options, apiAddr, dbURL string, apiPid int, line string) (string, error) {
	if o.reviewTasks <= 0 {
		return line, nil
	}
	review, err := reviewPhase(ctx, apiAddr, dbURL, apiPid, o.reviewTasks, o.reviewers, o.duration)
	if err != nil {
		return "", fmt.Errorf("review phase: %w", err)
	}
	return strings.TrimSpace(line + " " + review), nil
}

func finishWithRun(ctx context.Context, o options, apiAddr string, startWorker func() (*exec.Cmd, error), fx fixture, ratios string) error {
	if o.run.trips <= 0 {
		fmt.Println(ratios)
		return nil
	}
	worker, err := startWorker()
	if err != nil {
		return err
	}
	defer func() { _ = worker.Process.Signal(syscall.SIGTERM); _ = worker.Wait() }()
	opt, err := redis.ParseURL(o.redisURL)
	if err != nil {
		return err
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	tokens := make([]string, len(fx.runStepIDs))
	for i, id := range fx.runStepIDs {
		if tokens[i], err = mint("http://"+apiAddr, fx.hostToken, id); err != nil {
			return err
		}
	}
	if o.csvFiles > 0 {
		// First, so that the worker's peak RSS is the CSV files'.
		if err := csvPhase(apiAddr, worker.Process.Pid, tokens, o.csvFiles, o.csvCacheMB); err != nil {
			return err
		}
	}
	overhead, err := runPhase(ctx, o.run, rc, apiAddr, tokens, fx)
	if err != nil {
		return err
	}
	drainRatio, err := drainPhase(ctx, o.run, o.redisURL, rc, worker.Process.Pid, fx)
	if err != nil {
		return fmt.Errorf("drain phase: %w", err)
	}
	fmt.Println(strings.TrimSpace(fmt.Sprintf("%s drain_ratio=%.2f run_overhead_ms=%.2f", ratios, drainRatio, overhead)))
	return nil
}

// floodTargets are the routes the flood phase posts to without a token:
// the bundle upload (the one route that accepts megabytes, once
// authenticated) and a runtime verb.
var floodTargets = []struct{ path, contentType string }{
	{"/api/admin/bundles?name=flood", "text/html"},
	{"/api/app-runtime/read", "application/json"},
}

// floodPhase sends n concurrent anonymous uploads of size bytes to each
// flood target in turn and prints how they were answered and the api's peak
// memory (VmHWM, reset before the flood where the kernel allows) and its
// resident memory once the flood is over.
func floodPhase(addr string, pid, n, size int) error {
	reset := os.WriteFile(filepath.Join("/proc", strconv.Itoa(pid), "clear_refs"), []byte("5"), 0)
	before, err := rss(pid, "VmRSS:")
	if err != nil {
		return err
	}
	fmt.Printf("\nanonymous uploads: %d concurrent connections × %.1f MiB, no token (api RSS before: %.1f MiB)\n",
		n, float64(size)/(1<<20), float64(before)/(1<<20))
	for _, target := range floodTargets {
		start := time.Now()
		outcomes := flood(addr, target.path, target.contentType, n, size)
		fmt.Printf("  POST %-32s %s in %s\n", target.path, outcomes, time.Since(start).Round(time.Millisecond))
	}
	peak, err := rss(pid, "VmHWM:")
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	after, err := rss(pid, "VmRSS:")
	if err != nil {
		return err
	}
	scope := "during the flood"
	if reset != nil {
		scope = "since start (VmHWM could not be reset: " + reset.Error() + ")"
	}
	fmt.Printf("appruntime api peak memory %s (VmHWM): %.1f MiB; resident 2 s after: %.1f MiB\n\n",
		scope, float64(peak)/(1<<20), float64(after)/(1<<20))
	return nil
}

// flood sends n uploads of size bytes at once, each on its own connection,
// and counts the replies by status ("reset" when the connection ended
// before a reply could be read).
func flood(addr, path, contentType string, n, size int) string {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			outcome := upload(addr, path, contentType, size)
			mu.Lock()
			counts[outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d × %s", counts[k], k)
	}
	return b.String()
}

// upload posts size bytes to path without a token and returns the reply's
// status, or "reset".
func upload(addr, path, contentType string, size int) string {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "dial failed"
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	go func() {
		_, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, addr, contentType, size)
		chunk := make([]byte, 64<<10)
		for sent := 0; err == nil && sent < size; sent += len(chunk) {
			_, err = conn.Write(chunk[:min(len(chunk), size-sent)])
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "reset"
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return strconv.Itoa(res.StatusCode)
}

func command(ctx context.Context, name string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	return cmd
}

// fixture is what seed made.
type fixture struct {
	hostToken string
	stepID    string
	dataDSN   string
	// The /run phase's tenant ids, its CSV lookup tool, and the steps whose
	// sessions share its round trips (each surface is limited to 5/s).
	workspaceID, agentID, taskID string
	lookupToolID                 string
	runStepIDs                   []string
}

// runSurfaces is how many steps the /run phase's round trips rotate over:
// enough that none of them exceeds the per-surface burst.
const runSurfaces = 128

// seed creates the platform rows (tenant, data-source integration, binding
// with a one-row read and a one-row write, app tool, task, step) in the
// bench database and the data table in the data database.
func seed(ctx context.Context, dbURL, dataURL, upstreamURL string, secretsKey []byte, csvFiles int) (fixture, error) {
	data, err := store.Open(ctx, dataURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return fixture{}, err
	}
	defer data.Close()
	if err := data.DB.WithContext(ctx).Exec(`CREATE TABLE bench_items (id integer PRIMARY KEY, name text NOT NULL, n integer NOT NULL)`).Error; err != nil {
		return fixture{}, err
	}
	if err := data.DB.WithContext(ctx).Exec(`INSERT INTO bench_items SELECT g, 'item ' || g, 0 FROM generate_series(1, ?) g`, rows).Error; err != nil {
		return fixture{}, err
	}
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return fixture{}, err
	}
	defer st.Close()
	db := st.DB.WithContext(ctx)
	box, err := crypt.New(secretsKey)
	if err != nil {
		return fixture{}, err
	}
	fx := fixture{dataDSN: withParam(dataURL, "pool_max_conns", strconv.Itoa(poolConns))}
	ws := models.Workspace{ID: models.NewID(), Name: "bench"}
	user := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: "bench@example.test", Role: models.RoleAdmin, PasswordHash: "-"}
	agent := models.Agent{ID: models.NewID(), WorkspaceID: ws.ID, Name: "bench"}
	sealed, err := box.SealJSON(datasource.Secrets{DSN: fx.dataDSN})
	if err != nil {
		return fixture{}, err
	}
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws.ID, Name: "bench data", Kind: datasource.KindPostgres, SecretsEnc: sealed}
	spec := bindingspec.Spec{
		Reads:     []bindingspec.Read{{Op: "get_item", Table: "bench_items", Columns: []string{"id", "name", "n"}, Filterable: []string{"id"}, Limit: 1}},
		Writes:    []bindingspec.Write{{Op: "set_n", Table: "bench_items", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"n"}}},
		HTTPCalls: []bindingspec.HTTPCall{{Op: "lookup_item", Method: "GET", URL: upstreamURL + "/items/{{id}}"}},
		// file_preview is the document phase's.
		Capabilities: []string{"file_preview"},
		Tools:        []bindingspec.Tool{{Op: "lookup", Tool: "bench lookup", Params: []string{"match_criteria", "return_columns"}, Record: new(false)}},
	}
	csvToolRows, csvOps := csvTools(ws.ID, agent.ID, csvFiles)
	spec.Tools = append(spec.Tools, csvOps...)
	lookup := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "bench lookup",
		BaseTool: models.BaseCSVLookup, Config: models.MustJSON(map[string]any{"file_name": "bench.csv"})}
	b := models.Binding{ID: models.NewID(), WorkspaceID: ws.ID, Name: "bench", BindingKind: bindingspec.KindPostgres,
		IntegrationID: &integ.ID, AllowedOperations: models.MustJSON(spec), Version: 1}
	bundle := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws.ID, Name: "bench", SHA256: "-", ContentType: "text/html", StorageKey: "-"}
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "bench",
		BaseTool: models.BaseAppTool, BundleID: &bundle.ID, BindingID: &b.ID}
	task := models.Task{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, Status: models.TaskRunning}
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID, Status: models.StepCompleted}
	created := []any{&ws, &user, &agent, &integ, &b, &bundle, &tool, &lookup, &task, &step}
	for i := range csvToolRows {
		created = append(created, &csvToolRows[i])
	}
	for _, row := range created {
		if err := db.Create(row).Error; err != nil {
			return fixture{}, fmt.Errorf("seed %T: %w", row, err)
		}
	}
	fx.workspaceID, fx.agentID, fx.taskID, fx.lookupToolID = ws.ID, agent.ID, task.ID, lookup.ID
	// A task keeps at most two live sessions, so each surface has a task.
	for range runSurfaces {
		t := models.Task{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, Status: models.TaskRunning}
		s := models.Step{ID: models.NewID(), TaskID: t.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID, Status: models.StepCompleted}
		if err := db.Create(&t).Error; err != nil {
			return fixture{}, fmt.Errorf("seed task: %w", err)
		}
		if err := db.Create(&s).Error; err != nil {
			return fixture{}, fmt.Errorf("seed step: %w", err)
		}
		fx.runStepIDs = append(fx.runStepIDs, s.ID)
	}
	if err := loadseed.UploadCSV(ctx, st, secretsKey, task.ID, "bench.csv", rows); err != nil {
		return fixture{}, err
	}
	_, fx.hostToken, err = auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeHost, "bench", &user.ID, nil)
	fx.stepID = step.ID
	return fx, err
}

// serveUpstream serves the lookup upstream on a loopback port until ctx
// ends: GET /items/{id} answers a small JSON object.
func serveUpstream(ctx context.Context) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":%q,"name":"item %s","in_stock":true}`, r.PathValue("id"), r.PathValue("id"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

func withParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}

func freeAddr() string {
	addr, err := freeport.Addr()
	if err != nil {
		panic(err)
	}
	return addr
}

func waitReady(urls ...string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, u := range urls {
		for {
			status, _, err := fasthttp.Get(nil, u)
			if err == nil && status == 200 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready: %v (status %d)", u, err, status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func mint(apiURL, hostToken, stepID string) (string, error) {
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.SetRequestURI(apiURL + "/api/app-tools/sessions")
	req.Header.SetMethod("POST")
	req.Header.Set("Authorization", "Bearer "+hostToken)
	req.Header.SetContentType("application/json")
	req.SetBodyString(`{"step_id":"` + stepID + `"}`)
	if err := fasthttp.Do(req, res); err != nil {
		return "", err
	}
	var out struct {
		SessionToken string `json:"session_token"`
	}
	if err := json.Unmarshal(res.Body(), &out); err != nil || out.SessionToken == "" {
		return "", fmt.Errorf("mint answered %d: %s", res.StatusCode(), res.Body())
	}
	return out.SessionToken, nil
}

// measurement accumulates the rounds of one server on one verb.
type measurement struct {
	server    string
	latencies []time.Duration
	rounds    []result
}

func (m *measurement) add(r result) {
	m.latencies = append(m.latencies, r.latencies...)
	m.rounds = append(m.rounds, r)
}

// medianCPUPerRequest is the median over the rounds of the server
// process's own CPU time (user + system) per request, in microseconds: what
// the server costs apart from the database and the load generator.
func (m *measurement) medianCPUPerRequest() float64 {
	return m.medianPerRequest(func(r result) time.Duration { return r.cpu })
}

// medianDBCPUPerRequest is the same median of the Postgres processes' CPU
// time per request: the database's side of a request, which shares the
// machine's cores with the server and the load generator.
func (m *measurement) medianDBCPUPerRequest() float64 {
	return m.medianPerRequest(func(r result) time.Duration { return r.dbCPU })
}

func (m *measurement) medianPerRequest(cpu func(result) time.Duration) float64 {
	per := make([]float64, len(m.rounds))
	for i, r := range m.rounds {
		per[i] = float64(cpu(r).Microseconds()) / float64(len(r.latencies))
	}
	return median(per)
}

// redisPerRequest is the Redis commands and scripts per request over every
// round: counts, which do not drift with the machine's speed, so totals
// rather than medians.
func (m *measurement) redisPerRequest() (commands, scripts float64) {
	var total redisCount
	var requests int64
	for _, r := range m.rounds {
		total.commands += r.redis.commands
		total.scripts += r.redis.scripts
		requests += int64(len(r.latencies))
	}
	if requests == 0 {
		return 0, 0
	}
	return float64(total.commands) / float64(requests), float64(total.scripts) / float64(requests)
}

// apiPerRequest is one of the api's counters per request over every
// round: a total, like redisPerRequest's.
func (m *measurement) apiPerRequest(counter func(apiCounters) int64) float64 {
	var total, requests int64
	for _, r := range m.rounds {
		total += counter(r.api)
		requests += int64(len(r.latencies))
	}
	if requests == 0 {
		return 0
	}
	return float64(total) / float64(requests)
}

// apiCounters are counters the appruntime api exports on its metrics:
// its heap allocations, the statements and transactions it sent the
// platform's Postgres (appruntime_platform_db_*), and the statements it ran
// on the data source (appruntime_datasource_query_duration_seconds, BEGIN
// and COMMIT included; its begins are the transactions).
type apiCounters struct {
	mallocs                                  int64
	platformStatements, platformTransactions int64
	sourceStatements, sourceTransactions     int64
}

func (c apiCounters) sub(before apiCounters) apiCounters {
	return apiCounters{
		mallocs:              c.mallocs - before.mallocs,
		platformStatements:   c.platformStatements - before.platformStatements,
		platformTransactions: c.platformTransactions - before.platformTransactions,
		sourceStatements:     c.sourceStatements - before.sourceStatements,
		sourceTransactions:   c.sourceTransactions - before.sourceTransactions,
	}
}

// roundCounters is the api's counters before a round, its malloc count
// less what one scrape allocates (read from two scrapes back to back), so
// that the round's delta, which ends with a scrape, counts the requests'
// alone. A scrape sends no statement of its own within a round (the
// scrape-time gauges that read the database are cached for 5 s).
func roundCounters(addr string) (apiCounters, error) {
	a, err := scrapeAPI(addr)
	if err != nil {
		return apiCounters{}, err
	}
	b, err := scrapeAPI(addr)
	if err != nil {
		return apiCounters{}, err
	}
	b.mallocs += b.mallocs - a.mallocs
	return b, nil
}

// scrapeAPI reads the api's apiCounters from its metrics.
func scrapeAPI(addr string) (apiCounters, error) {
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return apiCounters{}, fmt.Errorf("api metrics: %w", err)
	}
	defer res.Body.Close()
	var c apiCounters
	seen := false
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into *int64
		switch {
		case strings.HasPrefix(line, "go_memstats_mallocs_total "):
			into, seen = &c.mallocs, true
		case strings.HasPrefix(line, "appruntime_platform_db_statements_total "):
			into = &c.platformStatements
		case strings.HasPrefix(line, "appruntime_platform_db_transactions_total "):
			into = &c.platformTransactions
		case strings.HasPrefix(line, "appruntime_datasource_query_duration_seconds_count{"):
			into = &c.sourceStatements
		default:
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return apiCounters{}, fmt.Errorf("api metrics: %q: %w", line, err)
		}
		*into += int64(f)
		if into == &c.sourceStatements && strings.Contains(line, `statement="begin"`) {
			c.sourceTransactions += int64(f)
		}
	}
	if !seen {
		return apiCounters{}, fmt.Errorf("api metrics: no go_memstats_mallocs_total (%v)", sc.Err())
	}
	return c, nil
}

// redisCount is what the Redis server has run: every command, those a
// script runs included (INFO commandstats counts them), and the scripts.
type redisCount struct{ commands, scripts int64 }

func (c redisCount) sub(before redisCount) redisCount {
	return redisCount{c.commands - before.commands, c.scripts - before.scripts}
}

// redisCommands is what the Redis server has run so far, from INFO
// commandstats, leaving out INFO itself (the bench's own reading).
func redisCommands(ctx context.Context, rc *redis.Client) (redisCount, error) {
	stats, err := rc.Info(ctx, "commandstats").Result()
	if err != nil {
		return redisCount{}, fmt.Errorf("redis INFO commandstats: %w", err)
	}
	return commandCalls(stats), nil
}

// commandCalls sums the calls= of INFO commandstats' lines
// (cmdstat_get:calls=3,usec=…), but INFO's.
func commandCalls(stats string) redisCount {
	var c redisCount
	for _, line := range strings.Split(stats, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			v, ok := strings.CutPrefix(f, "calls=")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			c.commands += n
			switch name {
			case "cmdstat_evalsha", "cmdstat_eval", "cmdstat_evalsha_ro", "cmdstat_eval_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
				c.scripts += n
			}
		}
	}
	return c
}

// medianRPS is the median over the rounds of the requests per second.
func (m *measurement) medianRPS() float64 {
	per := make([]float64, len(m.rounds))
	for i, r := range m.rounds {
		per[i] = r.rps()
	}
	return median(per)
}

func (m *measurement) percentiles() (p50, p99 time.Duration) {
	sort.Slice(m.latencies, func(i, j int) bool { return m.latencies[i] < m.latencies[j] })
	return m.latencies[len(m.latencies)/2], m.latencies[len(m.latencies)*99/100]
}

// roundRatios are the throughput ratios project/baseline of each round.
func roundRatios(project, baseline []result) []float64 {
	out := make([]float64, len(project))
	for i := range project {
		out[i] = project[i].rps() / baseline[i].rps()
	}
	return out
}

// median is the middle of xs (the mean of the two middle values when their
// number is even).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func formatRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

// benchVerbs are the verb phases, in the order they run and print.
var benchVerbs = []string{"read", "write", "lookup"}

// ratioLine is the ratios part of the last line: read_ratio=… write_ratio=…
// lookup_ratio=… for the verbs measured.
func ratioLine(ratio map[string]float64) string {
	var parts []string
	for _, v := range benchVerbs {
		if r, ok := ratio[v]; ok {
			parts = append(parts, fmt.Sprintf("%s_ratio=%.2f", v, r))
		}
	}
	return strings.Join(parts, " ")
}

// verbSet is the -verbs flag: a comma-separated list of benchVerbs, or true
// (all) or false (none).
type verbSet map[string]bool

func allVerbs() verbSet {
	s := verbSet{}
	for _, v := range benchVerbs {
		s[v] = true
	}
	return s
}

func (s verbSet) String() string {
	var on []string
	for _, v := range benchVerbs {
		if s[v] {
			on = append(on, v)
		}
	}
	return strings.Join(on, ",")
}

func (s *verbSet) Set(value string) error {
	switch value {
	case "true", "all":
		*s = allVerbs()
		return nil
	case "false", "none", "":
		*s = verbSet{}
		return nil
	}
	set := verbSet{}
	for _, v := range strings.Split(value, ",") {
		if !slices.Contains(benchVerbs, strings.TrimSpace(v)) {
			return fmt.Errorf("unknown verb %q (one of %s)", v, strings.Join(benchVerbs, ", "))
		}
		set[strings.TrimSpace(v)] = true
	}
	*s = set
	return nil
}

// result of one load run: every request's latency and the wall time.
type result struct {
	latencies []time.Duration
	elapsed   time.Duration
	cpu       time.Duration // the server's CPU time during the run
	dbCPU     time.Duration // every postgres process's CPU time during the run
	// redis is what the Redis server ran during the run, for every client
	// (INFO commandstats has no per-database count).
	redis redisCount
	// api is the api's counters over the run (appruntime's rounds only):
	// its heap allocations and its statements.
	api apiCounters
}

func (r result) rps() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// load sends requests from concurrency connections for d and measures them.
// Any non-200 reply stops the run with an error: a benchmark of failures
// measures nothing.
func load(ctx context.Context, addr, path, token string, body func(*rand.Rand) []byte, concurrency int, d time.Duration) (result, error) {
	client := &fasthttp.HostClient{Addr: addr, MaxConns: concurrency, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	deadline := time.Now().Add(d)
	lat := make([][]time.Duration, concurrency)
	errc := make(chan error, concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				req.Reset()
				req.SetRequestURI("http://" + addr + path)
				req.Header.SetMethod("POST")
				req.Header.SetContentType("application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				req.SetBody(body(r))
				t0 := time.Now()
				if err := client.Do(req, res); err != nil {
					errc <- err
					return
				}
				if res.StatusCode() != 200 {
					errc <- fmt.Errorf("%s answered %d: %s", path, res.StatusCode(), res.Body())
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		return result{}, err
	default:
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return result{}, errors.New("no request completed")
	}
	return result{latencies: all, elapsed: elapsed}, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// clockTicks is the kernel's USER_HZ: /proc's CPU times count in these.
const clockTicks = 100

// cpuTime reads a process's CPU time so far (utime + stime, all threads).
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	t, err := statCPU(raw)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// statCPU reads utime + stime from the text of a /proc/<pid>/stat.
func statCPU(raw []byte) (time.Duration, error) {
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+2:])
	f := strings.Fields(rest)
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.Join(err1, err2)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// replaceEnv returns env with key set to value (added when absent).
func replaceEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// postgresCPU is the CPU time so far of every process on the machine named
// postgres (the server's backends and its background processes). A backend
// that exits takes its time with it; the servers' pools keep theirs open.
func postgresCPU() time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total time.Duration
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(raw, []byte("(postgres)")) {
			continue
		}
		t, err := statCPU(raw)
		if err == nil {
			total += t
		}
	}
	return total
}

// peakRSS reads a process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) { return rss(pid, "VmHWM:") }

// rss reads one memory field of /proc/<pid>/status (VmHWM:, VmRSS:) in bytes.
func rss(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// runBaseline serves the raw baseline: a minimal Fiber app doing the same
// SELECT and UPDATE as the bench ops through a pgx pool of the same size.
func runBaseline(args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	dsn := fs.String("dsn", "", "Postgres DSN of the bench table")
	upstream := fs.String("upstream", "", "base URL of the lookup upstream")
	debugAddr := fs.String("debug-addr", "", "serve pprof on this address; empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *debugAddr != "" {
		// The default mux holds net/http/pprof's handlers.
		go func() { _ = http.ListenAndServe(*debugAddr, nil) }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := pgxpool.New(ctx, *dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Post("/read", func(c *fiber.Ctx) error {
		var in struct{ ID int }
		if err := json.Unmarshal(c.Body(), &in); err != nil {
			return fiber.ErrBadRequest
		}
		var id, n int
		var name string
		if err := pool.QueryRow(c.UserContext(), `SELECT "id", "name", "n" FROM "bench_items" WHERE "id" = $1 LIMIT 1`, in.ID).Scan(&id, &name, &n); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"columns": []string{"id", "name", "n"}, "rows": [][]any{{id, name, n}}, "row_count": 1})
	})
	app.Post("/write", func(c *fiber.Ctx) error {
		var in struct{ ID, N int }
		if err := json.Unmarshal(c.Body(), &in); err != nil {
			return fiber.ErrBadRequest
		}
		tag, err := pool.Exec(c.UserContext(), `UPDATE "bench_items" SET "n" = $1 WHERE "id" = $2`, in.N, in.ID)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"rows_affected": tag.RowsAffected()})
	})
	// The lookup baseline: the same upstream through net/http, its status
	// and JSON body answered as a lookup would.
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	app.Post("/lookup", func(c *fiber.Ctx) error {
		var in struct{ ID int }
		if err := json.Unmarshal(c.Body(), &in); err != nil {
			return fiber.ErrBadRequest
		}
		req, err := http.NewRequestWithContext(c.UserContext(), http.MethodGet, *upstream+"/items/"+strconv.Itoa(in.ID), nil)
		if err != nil {
			return err
		}
		res, err := client.Do(req)
		if err != nil {
			return fiber.ErrBadGateway
		}
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20+1))
		if err != nil {
			return fiber.ErrBadGateway
		}
		return c.JSON(fiber.Map{"kind": "http", "status": res.StatusCode, "body": json.RawMessage(body)})
	})
	go func() { <-ctx.Done(); _ = app.ShutdownWithTimeout(5 * time.Second) }()
	return app.Listen(*addr)
}
