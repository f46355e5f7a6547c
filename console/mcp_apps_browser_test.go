package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentmcp"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// thirdPartyHost serves testdata/mcp-apps-host, a page that is not ours
// built on the published @modelcontextprotocol/ext-apps AppBridge, and
// proxies its /mcp to the API with the agent's token and task header (as
// an agent platform's backend would hold them).
func thirdPartyHost(t *testing.T, apiURL, agentToken, taskID string) *httptest.Server {
	t.Helper()
	page, err := os.ReadFile("testdata/mcp-apps-host/host.html")
	require.NoError(t, err)
	script, err := os.ReadFile("testdata/mcp-apps-host/host.js")
	require.NoError(t, err, "testdata/mcp-apps-host/host.js is committed (npm ci && npm run build rebuilds it)")
	api, err := url.Parse(apiURL)
	require.NoError(t, err)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(api)
		r.Out.Header.Set("Authorization", "Bearer "+agentToken)
		r.Out.Header.Set(agentmcp.TaskHeader, taskID)
	}}
	mux := http.NewServeMux()
	mux.Handle("/mcp", proxy)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /host.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(script)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAnAppToolUnderAnMCPAppsHost: a third-party page on the published
// MCP Apps host bridge connects to /mcp, finds the demo's app tool by its
// _meta.ui.resourceUri, reads the bundle from resources/read, calls the
// tool (the step is added and parks the task) and renders the bundle in a
// sandboxed frame under the resource's CSP; the bundle, on the SDK the API
// serves, completes the MCP Apps handshake, takes the session from the
// tool result's _meta and lists the demo's invoices through the runtime
// API. Sessions last six seconds: the SDK renews through the host with the
// app-only tool (the host forwards tools/call to /mcp), and a write made
// after the first token expired reaches the data source.
func TestAnAppToolUnderAnMCPAppsHost(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t, func(c *config.Config) { c.SessionTTL = shortSessionTTL })
	f := seedDemo(t, s.P, s.Tenant)
	caller := task.Caller{WorkspaceID: s.Tenant.Workspace.ID, AgentID: s.Tenant.Agent.ID, Actor: "agent:" + s.Tenant.Agent.ID}
	tk, err := s.P.Tasks.Create(context.Background(), caller, task.TaskInput{Title: "Review over MCP"})
	require.NoError(t, err)
	host := thirdPartyHost(t, s.APIURL, s.Tenant.AgentToken, tk.ID)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(host.URL+"/"),
		browser.Poll(`window.hostLog && window.hostLog.some(e => e.step === "initialized" || e.step === "error")`, 60*time.Second),
	))
	logJSON, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.hostLog)`))
	require.NoError(t, err)
	var hostLog []map[string]any
	require.NoError(t, json.Unmarshal([]byte(logJSON), &hostLog))
	require.Len(t, hostLog, 4, logJSON)
	require.Equal(t, map[string]any{"step": "tools/list", "tool": "invoice_review", "uri": agentmcp.AppResourceURI(f.ToolID)}, hostLog[0])
	require.Equal(t, "text/html;profile=mcp-app", hostLog[1]["mimeType"])
	require.Equal(t, map[string]any{"connectDomains": []any{s.APIURL}, "resourceDomains": []any{s.APIURL}, "frameDomains": []any{}},
		hostLog[1]["csp"])
	require.Equal(t, false, hostLog[2]["isError"], logJSON)
	require.Equal(t, true, hostLog[2]["hasSession"], logJSON)
	require.Equal(t, "appruntime-bundle", hostLog[3]["app"], "the SDK answered the MCP Apps handshake")

	// The bundle read the demo's rows with the session it was given.
	frame := browser.Frame(t, ctx, "about:srcdoc")
	require.NoError(t, chromedp.Do(frame, chromedp.WaitVisible(chromedp.CSS(`#rows tbody tr:nth-child(3)`))))
	status, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#status`)))
	require.NoError(t, err)
	require.Equal(t, "3 invoice(s)", status)

	var step models.Step
	require.NoError(t, s.Store.DB.Where("task_id = ? AND kind = ?", tk.ID, models.StepAppTool).Take(&step).Error)
	var first models.AppSession
	require.NoError(t, s.Store.DB.Where("step_id = ?", step.ID).Order("created_at").First(&first).Error)
	require.Nil(t, first.UserID, "an agent's session has no reviewer")
	require.NotNil(t, first.TokenID, "minted with the agent token")

	// The SDK renews before the first token expires: a second session of
	// the step, minted through the host's forwarded tools/call.
	require.Eventually(t, func() bool {
		var n int64
		return s.Store.DB.Model(&models.AppSession{}).Where("step_id = ?", step.ID).Count(&n).Error == nil && n >= 2
	}, 20*time.Second, 100*time.Millisecond, "the bundle never renewed its session")
	time.Sleep(time.Until(first.ExpiresAt) + time.Second)
	require.NoError(t, chromedp.Do(frame,
		chromedp.Click(chromedp.CSS(`#rows tbody tr:nth-child(1) button`)),
		browser.Poll(`document.querySelector("#rows tbody tr:nth-child(1) td:nth-child(4)").textContent === "on_hold"`, 20*time.Second),
	))
	var invoiceStatus string
	require.NoError(t, f.Source.DB.Raw(`SELECT status FROM invoices WHERE id = 1`).Scan(&invoiceStatus).Error)
	require.Equal(t, "on_hold", invoiceStatus, "a write after the first token expired, on the renewed session")
	var parked models.Task
	require.NoError(t, s.Store.DB.Where("id = ?", tk.ID).Take(&parked).Error)
	require.Equal(t, models.TaskWaitingForInput, parked.Status)
}
