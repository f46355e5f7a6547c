package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/testkit/browser"
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

// devBundle is a bundle under development: it reads the demo's invoices
// through the SDK the API serves and shows mark with the count, then calls
// an op the binding does not have (refused).
func devBundle(apiURL, mark string) string {
	return `<!doctype html><p id="status">loading</p><script type="module">
import { connect } from "` + apiURL + `/sdk/appruntime.js";
const app = await connect();
const page = await app.read("list_invoices", { columns: ["id"], limit: 50 });
document.getElementById("status").textContent = "` + mark + ` " + page.rows.length + " invoice(s)";
await app.read("list_invoicez", {}).catch(() => {});
</script>`
}

// TestBundleDevReloadsOnSave runs the author's loop beside appruntime dev:
// `appruntime bundle dev DIR` uploads the directory's index.html, its page
// mounts it in Chromium as the demo step's artifact and the bundle reads the
// demo's invoices through the runtime (a refused call is listed beside the
// frame); a save shows as the next version in
// the same page with the same session; an upload the API refuses (over
// 4 MiB) shows its 413 next to the frame, which keeps the version that works.
func TestBundleDevReloadsOnSave(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	ctx := browser.New(t)
	dir := t.TempDir()
	apiAddr := freeAddr(t)
	env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+freeAddr(t))
	p := start(t, dir, env, "dev")
	waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second).Body.Close()
	info := readDevInfo(t, dir)

	src := filepath.Join(dir, "invoices")
	require.NoError(t, os.Mkdir(src, 0o755))
	index := filepath.Join(src, "index.html")
	require.NoError(t, os.WriteFile(index, []byte(devBundle(info.APIURL, "first")), 0o644))
	devAddr := freeAddr(t)
	loop := start(t, dir, env, "bundle", "dev", "--addr", devAddr, src)
	res := waitHTTP(t, loop, "http://"+devAddr+"/", 30*time.Second)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+devAddr+"/"),
		browser.WaitText("#version", `t.startsWith("version 1 ")`)))
	frame := browser.Frame(t, ctx, info.APIURL+"/bundles/")
	require.NoError(t, chromedp.Do(frame, browser.WaitText("#status", `/^first \d+ invoice\(s\)$/.test(t)`)),
		"the bundle reads the demo's invoices with the session the page minted")
	session := browser.Eval[string](t, ctx, `init.session_token`)
	require.NoError(t, chromedp.Do(ctx, browser.WaitText("#call-errors", `t.includes("read list_invoicez: 403 op \"list_invoicez\" is not allowed")`)),
		"a runtime call the API refused is listed beside the frame")

	require.NoError(t, os.WriteFile(index, []byte(devBundle(info.APIURL, "second")), 0o644))
	require.NoError(t, chromedp.Do(ctx, browser.WaitText("#version", `t.startsWith("version 2 ")`)))
	frame = browser.Frame(t, ctx, info.APIURL+"/bundles/")
	require.NoError(t, chromedp.Do(frame, browser.WaitText("#status", `/^second \d+ invoice\(s\)$/.test(t)`)),
		"the saved version is mounted")
	require.Equal(t, session, browser.Eval[string](t, ctx, `init.session_token`), "the session is kept across the reload")

	require.NoError(t, os.WriteFile(index, []byte(strings.Repeat("x", 4<<20+1)), 0o644))
	require.NoError(t, chromedp.Do(ctx, browser.WaitText("#errors", `t.startsWith("upload refused: 413")`)))
	require.Contains(t, browser.Eval[string](t, ctx, `document.getElementById("version").textContent`), "version 2 ",
		"the frame keeps the version that works")

	var versions struct {
		Versions []struct {
			Version int `json:"version"`
		} `json:"versions"`
	}
	api := flowAPI{t: t, base: info.APIURL}
	list := api.do("GET", "/api/admin/bundles", info.AdminToken, nil, 200)
	var id string
	for _, b := range list["bundles"].([]any) {
		if m := b.(map[string]any); m["name"] == "dev-invoices" {
			id = m["id"].(string)
		}
	}
	require.NotEmpty(t, id, "the loop's bundle is named after its directory")
	raw, err := json.Marshal(api.do("GET", "/api/admin/bundles/"+id, info.AdminToken, nil, 200))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &versions))
	require.Len(t, versions.Versions, 2, "one version per accepted save")
}
