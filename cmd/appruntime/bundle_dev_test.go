package main_test

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
)

// TestBundleTypesOfTheDemoBindingFromDev runs the command as an author
// would beside `appruntime dev`: no flag but the binding's id (the API URL
// and the admin token come from .appruntime/dev.json), and gets the demo
// binding's ops, list_invoices' filterable columns among them.
func TestBundleTypesOfTheDemoBindingFromDev(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	dir := t.TempDir()
	apiAddr := freeAddr(t)
	env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+freeAddr(t))
	p := start(t, dir, env, "dev")
	res := waitHTTP(t, p, "http://"+apiAddr+"/readyz", 60*time.Second)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res.Body.Close()
	var info struct {
		BindingID string `json:"binding_id"`
	}
	readJSONFile(t, filepath.Join(dir, ".appruntime", "dev.json"), &info)
	require.NotEmpty(t, info.BindingID)

	cmd := exec.Command(binary, "bundle", "types", "--binding", info.BindingID)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	require.NoError(t, err)
	want := bindingspec.TypeScript(demo.Spec(), "")
	_, body, _ := strings.Cut(string(out), "import type")
	require.Equal(t, want[strings.Index(want, "import type")+len("import type"):], body)
	require.Contains(t, string(out), `"list_invoices": { payload: { columns?: ("id" | "vendor" | "amount" | "status")[]; filters?: { "status"?: Filter; "vendor"?: Filter }`)
	require.Contains(t, string(out), `(`+info.BindingID+`, version 1)`)

	// Another id, another workspace's included, is the API's 404.
	cmd = exec.Command(binary, "bundle", "types", "--binding", "bnd_not_here")
	cmd.Dir, cmd.Env = dir, env
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "404")
}
