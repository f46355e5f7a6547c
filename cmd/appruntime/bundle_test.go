package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
)

// TestTheExampleIsTypedForTheDemoBinding: examples/invoice-review type-checks
// against the demo binding's ops, so its binding.json must be the binding
// the dev mode seeds (demo.Spec), and its src/binding.d.ts what `appruntime
// bundle types` writes for it (regenerate it with `npm run types` there).
func TestTheExampleIsTypedForTheDemoBinding(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../examples/invoice-review/binding.json")
	require.NoError(t, err)
	var file struct {
		Name              string          `json:"name"`
		AllowedOperations json.RawMessage `json:"allowed_operations"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	require.Equal(t, demo.BindingName, file.Name)
	var got bindingspec.Spec
	require.NoError(t, bindingspec.DecodeStored(file.AllowedOperations, &got))
	want, err := json.Marshal(demo.Spec())
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(gotJSON), "binding.json is the demo binding (internal/demo.Spec)")

	out := filepath.Join(t.TempDir(), "binding.d.ts")
	require.NoError(t, runBundle(context.Background(), []string{"types", "--spec", "../../examples/invoice-review/binding.json", "--out", out}))
	fresh, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile("../../examples/invoice-review/src/binding.d.ts")
	require.NoError(t, err)
	require.Equal(t, string(fresh), string(committed), "src/binding.d.ts is stale: run npm run types in examples/invoice-review")
}

// TestBundleTypesWritesTheCommittedFixture: the declarations of
// sdk/test/binding.json are sdk/test/binding.d.ts, which scripts/sdk-check
// type-checks examples against (regenerate it with
// `go run ./cmd/appruntime bundle types --spec sdk/test/binding.json --out sdk/test/binding.d.ts`).
func TestBundleTypesWritesTheCommittedFixture(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "binding.d.ts")
	require.NoError(t, runBundle(context.Background(), []string{"types", "--spec", "../../sdk/test/binding.json", "--out", out}))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := os.ReadFile("../../sdk/test/binding.d.ts")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// TestBundleTypesReadsTheBindingThroughTheAdminAPI plays the admin API:
// the command asks for the binding by id with the admin token of
// APPRUNTIME_ADMIN_TOKEN, and reports the API's own message when it refuses.
func TestBundleTypesReadsTheBindingThroughTheAdminAPI(t *testing.T) {
	fixture, err := os.ReadFile("../../sdk/test/binding.json")
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer adm_secret":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"missing or invalid admin token"}`))
		case r.URL.Path == "/api/admin/bindings/bnd_fixture":
			_, _ = w.Write(fixture)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"binding not found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir() // no dev.json there: the token comes from the environment only
	t.Setenv(adminTokenEnv, "adm_secret")

	out := filepath.Join(dir, "types.d.ts")
	require.NoError(t, runBundle(context.Background(), []string{"types", "--binding", "bnd_fixture", "--api", srv.URL, "--dev-dir", dir, "--out", out}))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := os.ReadFile("../../sdk/test/binding.d.ts")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	err = runBundle(context.Background(), []string{"types", "--binding", "bnd_other", "--api", srv.URL, "--dev-dir", dir})
	require.ErrorContains(t, err, "404 Not Found: binding not found")

	t.Setenv(adminTokenEnv, "wrong")
	err = runBundle(context.Background(), []string{"types", "--binding", "bnd_fixture", "--api", srv.URL, "--dev-dir", dir})
	require.ErrorContains(t, err, "missing or invalid admin token")

	t.Setenv(adminTokenEnv, "")
	err = runBundle(context.Background(), []string{"types", "--binding", "bnd_fixture", "--api", srv.URL, "--dev-dir", dir})
	require.ErrorContains(t, err, "no admin token: set "+adminTokenEnv)

	require.ErrorIs(t, runBundle(context.Background(), []string{"types"}), errUsage, "neither --binding nor --spec")
	require.ErrorIs(t, runBundle(context.Background(), []string{"types", "--binding", "a", "--spec", "b"}), errUsage, "both")
	require.ErrorIs(t, runBundle(context.Background(), []string{"typo"}), errUsage)
}
