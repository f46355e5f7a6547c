package main_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// exampleBundle is the example project's build (examples/invoice-review):
// scripts/example-check fails when it differs from what build.mjs makes of
// src/, so the test runs what the project builds without needing Node.
const exampleBundle = "../../examples/invoice-review/dist/invoice-review.html"

// TestExampleBundleApprovesInChromium uploads the example project's built
// bundle as a new version of the demo's bundle against appruntime dev (its
// embedded defaults: SQLite and the in-process Redis), opens the demo task
// in the reviewer's host page in Chromium, holds an invoice, approves with
// a reason (after renewing its session through the reviewer's host), and
// checks the task resumed: the bundle's typed calls work end to end
// through the host's handshake and the bundle CSP.
func TestExampleBundleApprovesInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	html, err := os.ReadFile(exampleBundle)
	require.NoError(t, err, "build it: (cd examples/invoice-review && npm ci && npm run build)")
	ctx := browser.New(t)

	dir := t.TempDir()
	apiAddr, consoleAddr := freeAddr(t), freeAddr(t)
	p := start(t, dir, baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+consoleAddr), "dev")
	waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second).Body.Close()
	waitHTTP(t, p, "http://"+consoleAddr+"/readyz", 10*time.Second).Body.Close()
	info := readDevInfo(t, dir)
	api := flowAPI{t: t, base: info.APIURL}
	require.Equal(t, "waiting_for_input", api.do("GET", "/api/agent/tasks/"+info.TaskID, info.AgentToken, nil, 200)["status"])

	uploaded := api.raw("POST", "/api/admin/bundles/"+info.BundleID+"/versions", info.AdminToken, "text/html", string(html), 201)
	version := uploaded["version"].(float64)
	require.Greater(t, version, 1.0, "a new version of the demo bundle: %v", uploaded)
	reviewer := addReviewer(t, info)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(info.ConsoleURL+"/review"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), reviewer),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), reviewerPassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#review-next`)),
		chromedp.Click(chromedp.CSS(`#review-next`)),
		chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`)),
	), "the reviewer opens the demo task")
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(location, "/review/tasks/"+info.TaskID), location)

	frame := browser.Frame(t, ctx, info.APIURL+"/bundles/"+info.BundleID+"/")
	frameURL, err := chromedp.Run(frame, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, frameURL, "/bundles/"+info.BundleID+"/", "the host runs the uploaded version")
	require.NoError(t, chromedp.Do(frame,
		browser.WaitText("#status", `/^\d+ invoice\(s\)$/.test(t)`),
		browser.WaitText("#session", `t.startsWith("Session until ")`),
		chromedp.Click(chromedp.CSS(`#rows tbody tr:nth-child(1) button`)),
		browser.Poll(`document.querySelector("#rows tbody tr:nth-child(1) td:nth-child(4)").textContent === "on_hold"`, 20*time.Second),
		chromedp.Click(chromedp.CSS(`#approve`)),
		browser.WaitText("#status", `!t.endsWith("invoice(s)")`),
	), "the example bundle reads, holds and approves")
	require.Equal(t, "Approved: the agent resumes.", browser.Eval[string](t, frame, `document.getElementById("status").textContent`))

	require.Eventually(t, func() bool {
		return api.do("GET", "/api/agent/tasks/"+info.TaskID, info.AgentToken, nil, 200)["status"] == "running"
	}, 20*time.Second, 100*time.Millisecond, "the approval resumes the task")
	require.NotContains(t, p.stderr.String(), `"level":"ERROR"`, "no error logged")
}
