// Command appruntime-bench measures the runtime verbs against a raw
// baseline in the same run: /read of a one-row op and /write of one row on
// the `appruntime api` process, and a minimal Fiber handler doing the same
// SELECT and UPDATE through a pgx pool, under the same load generator and
// concurrency. It prints throughput, p50/p99 and the ratio per verb, the api
// process's peak memory, and a last line "read_ratio=… write_ratio=…".
//
// scripts/bench builds the binaries and runs it; `appruntime-bench baseline`
// is the baseline server it starts.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
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
	adminURL    string // a Postgres URL with the right to create databases
	redisURL    string
	concurrency int
	warmup      time.Duration
	duration    time.Duration
}

func run(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.appruntime, "appruntime", "", "path of the appruntime binary (required)")
	fs.StringVar(&o.adminURL, "database", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "Postgres server to create the bench database on")
	fs.StringVar(&o.redisURL, "redis", "redis://127.0.0.1:6379/15", "Redis for the api process (a database of its own)")
	fs.IntVar(&o.concurrency, "c", 64, "concurrent connections")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up per measurement")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "measurement time per verb and server")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.appruntime == "" {
		return errors.New("-appruntime is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dbURL, err := freshDatabase(ctx, o.adminURL, "appruntime_bench")
	if err != nil {
		return err
	}
	key := base64.StdEncoding.EncodeToString([]byte("appruntime-bench-key-0123456789ab"))
	apiAddr, baseAddr := freeAddr(), freeAddr()
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+o.redisURL, "SECRETS_KEY="+key,
		"SESSION_KEYS=bench:"+key, "API_ADDR="+apiAddr, "LOG_LEVEL=error", "PUBLIC_API_URL=http://"+apiAddr)
	if out, err := command(ctx, o.appruntime, env, "migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v\n%s", err, out)
	}
	fx, err := seed(ctx, dbURL, []byte("appruntime-bench-key-0123456789ab"))
	if err != nil {
		return err
	}

	api := command(ctx, o.appruntime, env, "api")
	base := command(ctx, os.Args[0], os.Environ(), "baseline", "-addr", baseAddr, "-dsn", fx.dataDSN)
	for _, p := range []*exec.Cmd{api, base} {
		p.Stdout, p.Stderr = os.Stderr, os.Stderr
		if err := p.Start(); err != nil {
			return err
		}
		defer func() { _ = p.Process.Signal(syscall.SIGTERM); _ = p.Wait() }()
	}
	if err := waitReady("http://"+apiAddr+"/readyz", "http://"+baseAddr+"/healthz"); err != nil {
		return err
	}
	token, err := mint("http://"+apiAddr, fx.hostToken, fx.stepID)
	if err != nil {
		return err
	}

	fmt.Printf("appruntime bench: %d connections, %s per run (after %s warm-up), %d-row table, GOMAXPROCS of each server = cores\n\n",
		o.concurrency, o.duration, o.warmup, rows)
	fmt.Printf("%-6s %-10s %10s %9s %9s\n", "verb", "server", "req/s", "p50", "p99")
	runs := []struct {
		verb, server, addr, path string
		body                     func(r *rand.Rand) []byte
		token                    string
	}{
		{"read", "baseline", baseAddr, "/read", func(r *rand.Rand) []byte { return fmt.Appendf(nil, `{"id":%d}`, 1+r.IntN(rows)) }, ""},
		{"read", "appruntime", apiAddr, "/api/app-runtime/read", func(r *rand.Rand) []byte {
			return fmt.Appendf(nil, `{"op":"get_item","payload":{"filters":{"id":%d}}}`, 1+r.IntN(rows))
		}, token},
		{"write", "baseline", baseAddr, "/write", func(r *rand.Rand) []byte {
			return fmt.Appendf(nil, `{"id":%d,"n":%d}`, 1+r.IntN(rows), r.IntN(1000))
		}, ""},
		{"write", "appruntime", apiAddr, "/api/app-runtime/write", func(r *rand.Rand) []byte {
			return fmt.Appendf(nil, `{"op":"set_n","payload":{"row":{"id":%d,"n":%d}}}`, 1+r.IntN(rows), r.IntN(1000))
		}, token},
	}
	rps := map[string]float64{}
	for _, r := range runs {
		if _, err := load(ctx, r.addr, r.path, r.token, r.body, o.concurrency, o.warmup); err != nil {
			return fmt.Errorf("%s %s warm-up: %w", r.server, r.verb, err)
		}
		res, err := load(ctx, r.addr, r.path, r.token, r.body, o.concurrency, o.duration)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.server, r.verb, err)
		}
		rps[r.verb+"/"+r.server] = res.rps
		fmt.Printf("%-6s %-10s %10.0f %9s %9s\n", r.verb, r.server, res.rps, ms(res.p50), ms(res.p99))
	}
	peak, err := peakRSS(api.Process.Pid)
	if err != nil {
		return err
	}
	readRatio := rps["read/appruntime"] / rps["read/baseline"]
	writeRatio := rps["write/appruntime"] / rps["write/baseline"]
	fmt.Printf("\nappruntime api peak memory (VmHWM): %.1f MiB\n", float64(peak)/(1<<20))
	fmt.Printf("read_ratio=%.2f write_ratio=%.2f\n", readRatio, writeRatio)
	return nil
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
}

// seed creates the platform rows (tenant, data-source integration, binding
// with a one-row read and a one-row write, app tool, task, step) and the
// data table, in the bench database.
func seed(ctx context.Context, dbURL string, secretsKey []byte) (fixture, error) {
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return fixture{}, err
	}
	defer st.Close()
	db := st.DB.WithContext(ctx)
	if err := db.Exec(`CREATE TABLE bench_items (id integer PRIMARY KEY, name text NOT NULL, n integer NOT NULL)`).Error; err != nil {
		return fixture{}, err
	}
	if err := db.Exec(`INSERT INTO bench_items SELECT g, 'item ' || g, 0 FROM generate_series(1, ?) g`, rows).Error; err != nil {
		return fixture{}, err
	}
	box, err := crypt.New(secretsKey)
	if err != nil {
		return fixture{}, err
	}
	fx := fixture{dataDSN: withParam(dbURL, "pool_max_conns", strconv.Itoa(poolConns))}
	ws := models.Workspace{ID: models.NewID(), Name: "bench"}
	user := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: "bench@example.test", Role: models.RoleAdmin, PasswordHash: "-"}
	agent := models.Agent{ID: models.NewID(), WorkspaceID: ws.ID, Name: "bench"}
	sealed, err := box.SealJSON(datasource.Secrets{DSN: fx.dataDSN})
	if err != nil {
		return fixture{}, err
	}
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws.ID, Name: "bench data", Kind: datasource.KindPostgres, SecretsEnc: sealed}
	spec := binding.Spec{
		Reads:  []binding.Read{{Op: "get_item", Table: "bench_items", Columns: []string{"id", "name", "n"}, Filterable: []string{"id"}, Limit: 1}},
		Writes: []binding.Write{{Op: "set_n", Table: "bench_items", Mode: binding.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"n"}}},
	}
	b := models.Binding{ID: models.NewID(), WorkspaceID: ws.ID, Name: "bench", BindingKind: binding.KindPostgres,
		IntegrationID: &integ.ID, AllowedOperations: models.MustJSON(spec), Version: 1}
	bundle := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws.ID, Name: "bench", SHA256: "-", ContentType: "text/html", StorageKey: "-"}
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "bench",
		BaseTool: models.BaseAppTool, BundleID: &bundle.ID, BindingID: &b.ID}
	task := models.Task{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, Status: models.TaskRunning}
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID, Status: models.StepCompleted}
	for _, row := range []any{&ws, &user, &agent, &integ, &b, &bundle, &tool, &task, &step} {
		if err := db.Create(row).Error; err != nil {
			return fixture{}, fmt.Errorf("seed %T: %w", row, err)
		}
	}
	_, fx.hostToken, err = auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeHost, "bench", &user.ID, nil)
	fx.stepID = step.ID
	return fx, err
}

// freshDatabase drops and creates database name on the server of adminURL
// and returns its URL.
func freshDatabase(ctx context.Context, adminURL, name string) (string, error) {
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := pool.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	i := strings.LastIndex(adminURL, "/")
	rest := ""
	if q := strings.Index(adminURL[i:], "?"); q >= 0 {
		rest = adminURL[i+q:]
	}
	return adminURL[:i+1] + name + rest, nil
}

func withParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
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

// result of one load run.
type result struct {
	rps      float64
	p50, p99 time.Duration
}

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
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return result{
		rps: float64(len(all)) / elapsed.Seconds(),
		p50: all[len(all)/2],
		p99: all[len(all)*99/100],
	}, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// peakRSS reads a process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// runBaseline serves the raw baseline: a minimal Fiber app doing the same
// SELECT and UPDATE as the bench ops through a pgx pool of the same size.
func runBaseline(args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	dsn := fs.String("dsn", "", "Postgres DSN of the bench table")
	if err := fs.Parse(args); err != nil {
		return err
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
	go func() { <-ctx.Done(); _ = app.ShutdownWithTimeout(5 * time.Second) }()
	return app.Listen(*addr)
}
