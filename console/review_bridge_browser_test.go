package console_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// bridgeLog is a bundle that writes every message the host sends it into
// #log, one JSON line each (init as its capabilities), and posts to the
// host whatever window.send is given.
const bridgeLog = `<!doctype html><html><body><pre id="log"></pre>
<script>
window.addEventListener("message", (e) => {
  if (e.source !== parent) return;
  const m = e.data || {};
  const line = m.type === "init" ? { type: "init", capabilities: m.runtime.capabilities } : m;
  document.getElementById("log").textContent += JSON.stringify(line) + "\n";
});
window.send = (m) => { parent.postMessage(m, "*"); return true; };
parent.postMessage({ type: "ready" }, "*");
</script></body></html>`

// lastHostState is the selectionMode of the last host_state the bridgeLog
// bundle received ("" before any).
const lastHostState = `(() => {
  const lines = document.querySelector("#log").textContent.trim().split("\n").filter(Boolean).map(JSON.parse);
  const states = lines.filter((m) => m.type === "host_state");
  return states.length ? states[states.length - 1].selectionMode : "";
})()`

// TestReviewerBridgeMessagesInTheBrowser drives the rest of the bridge on
// the reviewer's page: set_translation overlays each page's translation
// from get_translation (a LibreTranslate stand-in on loopback, asked once
// per page: showing it again is served from the cache) and hides it;
// open_citation marks the cited page of the named document, falls back to
// the open document without file_name, and ignores malformed citations;
// host_state reports selection lowered to "off" while the reviewer uses the
// highlighter; a granted abort_review_task drops the claim and the
// assignment and returns to /review.
func TestReviewerBridgeMessagesInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	engine := testkit.NewLibreTranslate(t)
	s := newStack(t, func(c *config.Config) { c.Tools.TranslateURL = engine.URL })
	f := seedDemo(t, s.P, s.Tenant)
	require.NoError(t, s.Store.DB.Model(&models.Agent{}).Where("id = ?", s.Tenant.Agent.ID).
		Update("document_translation_enabled", true).Error)
	tool := newProbeTool(t, s, f, bridgeLog, "document_selection", "abort_review_task")
	id := tool.task(t, "Probe", 5,
		probeDocument{Name: "invoice.pdf", Pages: []string{"Total due 120 EUR", "Bank details"}},
		probeDocument{Name: "contract.pdf", Pages: []string{"Parties", "Term of one year", "Signatures"}})

	require.Equal(t, s.URL+"/review/tasks/"+id, reviewNextSignedIn(t, ctx, s, f.ReviewerEmail))
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+tool.BundleID+"/")
	require.NoError(t, chromedp.Do(frame, browser.WaitText("#log", `t.includes('"type":"init"')`)))
	initLine := browser.Eval[string](t, frame, `document.querySelector("#log").textContent.split("\n")[0]`)
	require.Contains(t, initLine, `"get_translation"`, "a translation engine is configured and the agent translates")
	send := func(message string) {
		t.Helper()
		require.True(t, browser.Eval[bool](t, frame, `send(`+message+`)`))
	}

	// set_translation: every page gets its overlay, one engine request each.
	send(`{type: "set_translation", show: true}`)
	const overlaysShown = `[...document.querySelectorAll(".document .page-translation")].every((el) => !el.hidden && el.textContent !== "")`
	require.NoError(t, chromedp.Do(ctx, browser.Poll(overlaysShown, 15*time.Second)))
	overlay := browser.Eval[string](t, ctx, `document.querySelector('.document[data-file-name="invoice.pdf"] .page[data-page="1"] .page-translation').textContent`)
	require.Equal(t, "[en] TOTAL DUE 120 EUR", overlay)
	require.EqualValues(t, 5, engine.Requests(), "one request per page of the two documents")
	send(`{type: "set_translation", show: "yes"}`) // malformed: ignored
	send(`{type: "set_translation", show: false}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(
		`[...document.querySelectorAll(".document .page-translation")].every((el) => el.hidden)`, 10*time.Second)))
	send(`{type: "set_translation", show: true}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(overlaysShown, 15*time.Second)))
	require.EqualValues(t, 5, engine.Requests(), "shown again from the cached rows")

	// open_citation: the named document's page, then the open document's.
	// Each page the host marks is recorded, so an ignored message shows.
	browser.Eval[bool](t, ctx, `(() => {
		window.cited = [];
		new MutationObserver((ms) => ms.forEach((m) => {
			if (m.target.classList.contains("cited")) cited.push(m.target.closest(".document").dataset.fileName + ":" + m.target.dataset.page);
		})).observe(document.querySelector("#viewer"), { subtree: true, attributes: true, attributeFilter: ["class"] });
		return true;
	})()`)
	pageAttr := func(file string, page int, attr string) string {
		t.Helper()
		return browser.Eval[string](t, ctx, `document.querySelector('.document[data-file-name="`+file+`"] .page[data-page="`+
			strconv.Itoa(page)+`"]').getAttribute("`+attr+`") || ""`)
	}
	send(`{type: "open_citation", source_page: 2, label: "Line 2", file_name: "contract.pdf"}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`cited.length === 1`, 10*time.Second)))
	require.Equal(t, "Line 2", pageAttr("contract.pdf", 2, "data-citation-label"))
	for _, bad := range []string{
		`{type: "open_citation", source_page: 1, file_name: "invoice.pdf", label: "` + strings.Repeat("é", 201) + `"}`,
		`{type: "open_citation", citation_ids: [], file_name: "invoice.pdf"}`,
		`{type: "open_citation", citation_ids: ["3"], file_name: "invoice.pdf"}`,
		`{type: "open_citation", source_page: 0, file_name: "invoice.pdf"}`,
		`{type: "open_citation", source_page: 1.5, file_name: "invoice.pdf"}`,
		`{type: "open_citation", file_name: "invoice.pdf"}`,
		`{type: "open_citation", source_page: 1, file_name: ""}`,
		`{type: "open_citation", source_page: 1, file_name: "unknown.pdf"}`,
	} {
		send(bad)
	}
	// No file_name: the open document (contract.pdf, not the first one).
	send(`{type: "open_citation", source_page: 3}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`cited.length >= 2`, 10*time.Second)))
	require.Equal(t, []any{"contract.pdf:2", "contract.pdf:3"}, browser.Eval[[]any](t, ctx, `cited`), "malformed citations are ignored")
	require.Equal(t, "", pageAttr("contract.pdf", 3, "data-citation-ids"), "a source_page names no citation ids")
	require.Equal(t, "", pageAttr("contract.pdf", 3, "data-citation-label"), "a citation without a label shows none")
	require.Equal(t, "", pageAttr("contract.pdf", 2, "data-citation-label"), "the previous citation's label is gone with its mark")
	require.Equal(t, 1, browser.Eval[int](t, ctx, `document.querySelectorAll(".page.cited").length`))

	// host_state: capture is "text" once asked, "off" while the highlighter is in use.
	send(`{type: "set_selection_mode", enabled: true}`)
	require.NoError(t, chromedp.Do(frame, browser.Poll(lastHostState+` === "text"`, 10*time.Second)))
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#highlighter`))))
	require.NoError(t, chromedp.Do(frame, browser.Poll(lastHostState+` === "off"`, 10*time.Second)))
	browser.Eval[bool](t, ctx, `(() => {
		const el = document.querySelector('.document .page[data-page="1"] .page-text');
		const r = document.createRange(); r.selectNodeContents(el);
		const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r);
		document.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
		return true;
	})()`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#highlighter`))))
	require.NoError(t, chromedp.Do(frame, browser.Poll(lastHostState+` === "text"`, 10*time.Second)))
	log := browser.Eval[string](t, frame, `document.querySelector("#log").textContent`)
	require.NotContains(t, log, `"type":"document_selection"`, "nothing is captured while the highlighter is in use")

	// abort_review_task (granted): the claim and the assignment are dropped.
	send(`{type: "abort_review_task"}`)
	require.Eventually(t, func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.HasPrefix(loc, s.URL+"/review") && !strings.Contains(loc, "/tasks/")
	}, 15*time.Second, 100*time.Millisecond, "the host returns to /review")
	var back models.Task
	require.NoError(t, s.Store.DB.Where("id = ?", id).Take(&back).Error)
	require.Nil(t, back.ClaimedBy)
	require.Nil(t, back.ClaimExpiresAt)
	require.Nil(t, back.AssignedTo)
}
