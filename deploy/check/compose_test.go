package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads deploy/compose.yaml with the Compose specification's
// own loader (what `docker compose config` runs: schema validation,
// interpolation, anchors and merges, env files), with
// appruntime.env.example standing in for the operator's appruntime.env.
func loadCompose(t *testing.T, compose []byte) (*types.Project, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile("../appruntime.env.example")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "appruntime.env"), env, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "compose.yaml")
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: file, Content: compose}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("appruntime", true) })
}

// TestCompose: the Compose file loads and wires what docs/deploy.md
// promises: every service, a migrate that runs before the app, health
// checks on the real endpoints, volumes for Postgres and blobs, the
// sandboxed script worker on its own image.
func TestCompose(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(t, raw)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, name := range []string{"postgres", "redis", "migrate", "api", "console", "worker", "script-worker"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
	health := map[string]string{"api": "/readyz", "console": "/readyz", "worker": "/metrics", "script-worker": "/metrics"}
	for name, path := range health {
		s := p.Services[name]
		if s.HealthCheck == nil || !strings.Contains(strings.Join(s.HealthCheck.Test, " "), path) {
			t.Errorf("%s: healthcheck %v, want a probe of %s", name, s.HealthCheck, path)
		}
		if d, ok := s.DependsOn["migrate"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("%s: does not wait for migrate to complete: %v", name, s.DependsOn)
		}
		if s.Environment["DATABASE_URL"] == nil || s.Environment["BLOB_DIR"] == nil {
			t.Errorf("%s: no DATABASE_URL or BLOB_DIR from the env file", name)
		}
		if !mounts(s, "blobs", "/var/lib/appruntime/blobs") {
			t.Errorf("%s: no blobs volume", name)
		}
	}
	if !mounts(p.Services["postgres"], "postgres", "/var/lib/postgresql/data") {
		t.Error("postgres: no data volume")
	}
	if got := p.Services["script-worker"].Build; got == nil || got.Target != "script-worker" {
		t.Errorf("script-worker: build %+v, want target script-worker", got)
	}
	if got := p.Services["script-worker"].Command; strings.Join(got, " ") != "worker --queues script" {
		t.Errorf("script-worker: command %v", got)
	}
	if got := p.Services["worker"].Command; strings.Contains(strings.Join(got, " "), "script") {
		t.Errorf("worker: command %v serves the script queue, which its image cannot run", got)
	}
}

// TestComposeCatches: the loader refuses a broken file, so a passing
// TestCompose means something.
func TestComposeCatches(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"unknown key":     "services:\n  api:\n    image: x\n    helthcheck: {test: [CMD, true]}\n",
		"bad depends_on":  "services:\n  api:\n    image: x\n    depends_on: {migrate: {condition: done}}\n  migrate:\n    image: x\n",
		"missing service": "services:\n  api:\n    image: x\n    depends_on: [migrate]\n",
	} {
		if _, err := loadCompose(t, []byte(body)); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
}

func mounts(s types.ServiceConfig, source, target string) bool {
	for _, v := range s.Volumes {
		if v.Source == source && v.Target == target {
			return true
		}
	}
	return false
}
