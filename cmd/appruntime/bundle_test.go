package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

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
