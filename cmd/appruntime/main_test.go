package main_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/freeport"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "appruntime-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "appruntime")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build appruntime: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var key = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// baseEnv is a clean environment: no DATABASE_URL or REDIS_URL leak in from the shell.
func baseEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	return append(env, extra...)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return addr
}

// process is a running appruntime command.
type process struct {
	cmd    *exec.Cmd
	stdout testkit.SyncBuffer
	stderr testkit.SyncBuffer
	done   chan error
	exited atomic.Bool
}

func start(t *testing.T, dir string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary, args...), done: make(chan error, 1)}
	p.cmd.Dir = dir
	p.cmd.Env = env
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		err := p.cmd.Wait()
		p.exited.Store(true)
		p.done <- err
	}()
	t.Cleanup(func() {
		if !p.exited.Load() {
			_ = p.cmd.Process.Kill()
		}
	})
	return p
}

// stop sends SIGTERM and returns how long the exit took and the exit error.
func (p *process) stop(t *testing.T) (time.Duration, error) {
	t.Helper()
	begin := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		return time.Since(begin), err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("no exit 30 s after SIGTERM\nstderr:\n%s", p.stderr.String())
		return 0, nil
	}
}

func waitHTTP(t *testing.T, p *process, url string, within time.Duration) *http.Response {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			t.Fatalf("process exited early: %v\nstderr:\n%s", err, p.stderr.String())
		default:
		}
		res, err := http.Get(url)
		if err == nil {
			return res
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within %s\nstderr:\n%s", url, within, p.stderr.String())
	return nil
}

func TestDevStartsWithNoServersWritesDevJSONAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	dir := t.TempDir()
	apiAddr, consoleAddr := freeAddr(t), freeAddr(t)
	env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+consoleAddr)

	p := start(t, dir, env, "dev")
	res := waitHTTP(t, p, "http://"+apiAddr+"/healthz", 60*time.Second)
	require.Equal(t, 200, res.StatusCode)
	res.Body.Close()
	for _, url := range []string{"http://" + apiAddr + "/readyz", "http://" + consoleAddr + "/readyz"} {
		res := waitHTTP(t, p, url, 10*time.Second)
		require.Equal(t, 200, res.StatusCode, url)
		res.Body.Close()
	}

	raw, err := os.ReadFile(filepath.Join(dir, ".appruntime", "dev.json"))
	require.NoError(t, err)
	var info map[string]any
	require.NoError(t, json.Unmarshal(raw, &info))
	for _, k := range []string{"api_url", "console_url", "admin_email", "admin_password", "host_token", "agent_token",
		"workspace_id", "agent_id", "configured_tool_id", "task_id", "step_id"} {
		require.NotEmpty(t, info[k], "dev.json key %s", k)
	}
	require.Equal(t, "http://"+apiAddr, info["api_url"])
	require.Contains(t, p.stdout.String(), info["host_token"].(string), "the token is printed")
	require.Contains(t, p.stdout.String(), info["step_id"].(string), "the demo ids are printed")

	took, err := p.stop(t)
	require.NoError(t, err, "exit status 0 after SIGTERM\nstderr:\n%s", p.stderr.String())
	require.Less(t, took, 10*time.Second)

	// A second start reuses the same data.
	p2 := start(t, dir, env, "dev")
	res = waitHTTP(t, p2, "http://"+apiAddr+"/healthz", 60*time.Second)
	res.Body.Close()
	raw2, err := os.ReadFile(filepath.Join(dir, ".appruntime", "dev.json"))
	require.NoError(t, err)
	var info2 map[string]any
	require.NoError(t, json.Unmarshal(raw2, &info2))
	delete(info, "redis_url") // the in-process Redis listens on a new port each start
	delete(info2, "redis_url")
	require.Equal(t, info, info2)
	_, err = p2.stop(t)
	require.NoError(t, err)
}

func TestAPIWithBadRedisURLExitsNamingIt(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	for _, redisURL := range []string{"redis://127.0.0.1:1/0", "http://not-redis", "redis://host:notaport"} {
		cmd := exec.Command(binary, "api")
		cmd.Env = baseEnv("DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "SECRETS_KEY="+key, "SESSION_KEYS=k1:"+key,
			"API_ADDR="+freeAddr(t))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "api must exit non-zero for REDIS_URL=%s", redisURL)
		require.NotEqual(t, 0, exit.ExitCode())
		require.Contains(t, string(out), "REDIS_URL", "for REDIS_URL=%s", redisURL)
	}
}

func TestUnreachableDatabaseExitsNamingDatabaseURL(t *testing.T) {
	t.Parallel()
	testkit.Redis(t) // fail early with a clear message when Redis is absent
	dbURL := "postgres://appruntime:pw-never-shown@127.0.0.1:1/appruntime"
	env := baseEnv("DATABASE_URL="+dbURL, "REDIS_URL="+testkit.RedisURL(), "SECRETS_KEY="+key, "SESSION_KEYS=k1:"+key,
		"API_ADDR="+freeAddr(t))
	for _, cmdName := range []string{"api", "worker", "migrate"} {
		cmd := exec.Command(binary, cmdName)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s must exit non-zero", cmdName)
		require.Contains(t, string(out), "DATABASE_URL", cmdName)
		require.NotContains(t, string(out), "pw-never-shown", "%s: the password is never printed", cmdName)
	}
}

func TestServersRefuseAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	redisURL := testkit.RedisURL()
	testkit.Redis(t) // fail early with a clear message when Redis is absent
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	env := baseEnv("DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "SECRETS_KEY="+key, "SESSION_KEYS=k1:"+key,
		"CONSOLE_SESSION_KEY="+key, "API_ADDR="+freeAddr(t), "CONSOLE_ADDR="+freeAddr(t))
	for _, cmdName := range []string{"api", "console", "worker"} {
		cmd := exec.Command(binary, cmdName)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.Error(t, err, cmdName)
		require.Contains(t, string(out), "appruntime migrate", cmdName)
	}
}

func TestMigrateThenServeOnPostgresAndDrain(t *testing.T) {
	t.Parallel()
	testkit.Redis(t) // fail early with a clear message when Redis is absent
	dbURL := testkit.SchemaURL(t)
	addr := freeAddr(t)
	env := baseEnv("DATABASE_URL="+dbURL, "REDIS_URL="+testkit.RedisURL(), "SECRETS_KEY="+key, "SESSION_KEYS=k1:"+key,
		"API_ADDR="+addr)

	out, err := exec.Command(binary, "migrate").CombinedOutput()
	require.Error(t, err, "migrate without DATABASE_URL fails")
	require.Contains(t, string(out), "DATABASE_URL")

	cmd := exec.Command(binary, "migrate")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.True(t, strings.Contains(string(out), "schema version"), string(out))

	p := start(t, t.TempDir(), env, "api")
	res := waitHTTP(t, p, "http://"+addr+"/readyz", 30*time.Second)
	require.Equal(t, 200, res.StatusCode)
	res.Body.Close()
	res, err = http.Get("http://" + addr + "/no-such-route")
	require.NoError(t, err)
	require.Equal(t, 404, res.StatusCode)
	res.Body.Close()
	took, err := p.stop(t)
	require.NoError(t, err, p.stderr.String())
	require.Less(t, took, 10*time.Second)
	require.Contains(t, p.stderr.String(), `"request_id"`, "access lines carry the request id")
}

// openSchema opens the store at dbURL for the test to look into.
func openSchema(t *testing.T, dbURL string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dbURL, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestOperatorCreatesAWorkspaceFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dbURL := testkit.SchemaURL(t)
	cmd := exec.Command(binary, "workspace", "create", "Acme invoices")
	cmd.Env = baseEnv("DATABASE_URL=" + dbURL)
	out, err := cmd.Output()
	require.NoError(t, err, string(out))
	var created struct {
		WorkspaceID string `json:"workspace_id"`
		Name        string `json:"name"`
		AdminToken  string `json:"admin_token"`
	}
	require.NoError(t, json.Unmarshal(out, &created), string(out))
	require.Equal(t, "Acme invoices", created.Name)

	st := openSchema(t, dbURL)
	p, err := auth.Verify(context.Background(), st.DB, created.AdminToken, models.ScopeAdmin)
	require.NoError(t, err, "the printed token administers the new workspace")
	require.Equal(t, created.WorkspaceID, p.WorkspaceID)
	var actor string
	require.NoError(t, st.DB.Model(&models.AuditEntry{}).Where("action = ? AND target_id = ?", "workspace.create", created.WorkspaceID).
		Select("actor").Scan(&actor).Error)
	require.Equal(t, "operator", actor)

	for _, args := range [][]string{{"workspace"}, {"workspace", "create"}, {"workspace", "delete", "x"}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = baseEnv("DATABASE_URL=" + dbURL)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v", args)
		require.Equal(t, 2, exit.ExitCode(), "%v", args)
		require.Contains(t, string(out), "usage: appruntime workspace create NAME")
	}
	cmd = exec.Command(binary, "workspace", "create", "x")
	cmd.Env = baseEnv()
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "DATABASE_URL")
}

func TestMigrateReportsBindingsThatBreakTheFixedValuesRule(t *testing.T) {
	t.Parallel()
	dbURL := testkit.SchemaURL(t)
	st := openSchema(t, dbURL)
	tn := testkit.NewTenant(t, st.DB)
	spec := bindingspec.Spec{Writes: []bindingspec.Write{
		{Op: "record", Table: "decisions", Mode: bindingspec.ModeInsert, Columns: []string{"decision"}, FixedValues: map[string]any{"task_id": "{{task_id}}"}},
		{Op: "reassign", Table: "decisions", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"decision"},
			FixedValues: map[string]any{"task_id": "{{task_id}}"}},
	}}
	// Saved as a release before the rule would have stored it.
	b := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "Old decisions", BindingKind: bindingspec.KindPostgres,
		AllowedOperations: models.MustJSON(spec), Version: 1}
	require.NoError(t, st.DB.Create(&b).Error)

	cmd := exec.Command(binary, "migrate")
	cmd.Env = baseEnv("DATABASE_URL=" + dbURL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the report does not fail the migration: %s", out)
	require.Contains(t, string(out), "migrate: 1 write op(s) of saved bindings are refused (403) until an admin fixes them")
	require.Contains(t, string(out), fmt.Sprintf(`workspace %s, binding %s "Old decisions": write op "reassign" (mode update): fixed_values column "task_id" is not one of its key_columns`,
		tn.Workspace.ID, b.ID))
	require.NotContains(t, string(out), `"record"`, "an insert's fixed value is fine")
}
