package console_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/citation"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// TestCitationsAndASplitInTheReviewersViewer drives issue 30 §2 and §3 on
// the reviewer's page with a bundle posting raw bridge messages:
// open_citation with stored citation_ids opens the cited file at its page
// and highlights the box, or, without a box, the quote found on the page;
// an id the task does not hold is a citation_error back to the bundle and
// the viewer stays; open_split shows the original's pages beside the
// parts', the reviewer moves the boundary a page earlier and confirms, and
// the bundle receives the confirmed ranges.
func TestCitationsAndASplitInTheReviewersViewer(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, bridgeLog)
	id := tool.task(t, "Cited", 5,
		probeDocument{Name: "invoice.pdf", Pages: []string{"Invoice ACME", "Total due 120 EUR"}},
		probeDocument{Name: "contract.pdf", Pages: []string{"Parties", "Term of one year", "Signed by both parties", "Annex"}})
	cites, err := citation.Save(context.Background(), s.Store.DB, id, models.NewID(), []citation.Input{
		{File: "invoice.pdf", Page: 2, Quote: "Total due 120 EUR", Box: &citation.Box{X: 0.1, Y: 0.2, W: 0.5, H: 0.1}},
		{File: "contract.pdf", Page: 3, Quote: "signed  by BOTH"},
	})
	require.NoError(t, err)
	boxed, quoted := strconv.FormatInt(cites[0].ID, 10), strconv.FormatInt(cites[1].ID, 10)

	require.Equal(t, s.URL+"/review/tasks/"+id, reviewNextSignedIn(t, ctx, s, f.ReviewerEmail))
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+tool.BundleID+"/")
	require.NoError(t, chromedp.Do(frame, browser.WaitText("#log", `t.includes('"type":"init"')`)))
	send := func(message string) {
		t.Helper()
		require.True(t, browser.Eval[bool](t, frame, `send(`+message+`)`))
	}
	page := func(file string, n int) string {
		return `document.querySelector('.document[data-file-name="` + file + `"] .page[data-page="` + strconv.Itoa(n) + `"]')`
	}

	// A box: drawn on the cited page's image, where the citation says.
	send(`{type: "open_citation", citation_ids: [` + boxed + `]}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(page("invoice.pdf", 2)+`.querySelector('.page-canvas .citation-box[data-citation-id="`+boxed+`"]') !== null`, 15*time.Second)))
	require.True(t, browser.Eval[bool](t, ctx, page("invoice.pdf", 2)+`.classList.contains("cited")`))
	require.Equal(t, boxed, browser.Eval[string](t, ctx, page("invoice.pdf", 2)+`.getAttribute("data-citation-ids")`))
	style := browser.Eval[[]any](t, ctx, `(() => { const b = document.querySelector(".citation-box"); return [b.style.left, b.style.top, b.style.width, b.style.height]; })()`)
	require.Equal(t, []any{"10%", "20%", "50%", "10%"}, style)
	require.Equal(t, 1, browser.Eval[int](t, ctx, `document.querySelectorAll(".citation-box").length`), "only the cited page is highlighted")

	// A quote without a box: found on the page's text, case and spacing aside.
	send(`{type: "open_citation", citation_ids: [` + quoted + `], label: "Signature"}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(page("contract.pdf", 3)+`.querySelector("mark.cited-quote") !== null`, 15*time.Second)))
	require.Equal(t, "Signed by both", browser.Eval[string](t, ctx, page("contract.pdf", 3)+`.querySelector("mark.cited-quote").textContent`))
	require.Equal(t, "Signature", browser.Eval[string](t, ctx, page("contract.pdf", 3)+`.getAttribute("data-citation-label")`))
	require.Zero(t, browser.Eval[int](t, ctx, `document.querySelectorAll(".citation-box").length`), "the previous highlight is gone")
	require.False(t, browser.Eval[bool](t, ctx, page("invoice.pdf", 2)+`.classList.contains("cited")`))

	// An unknown id (and another task's would be the same): a clear error back, the viewer stays.
	send(`{type: "open_citation", citation_ids: [` + quoted + `, 987654321]}`)
	require.NoError(t, chromedp.Do(frame, browser.WaitText("#log", `t.includes('"type":"citation_error"')`)))
	logged := browser.Eval[string](t, frame, `document.querySelector("#log").textContent`)
	require.Contains(t, logged, `"citation_ids":[`+quoted+`,987654321]`)
	require.Contains(t, logged, `unknown citation id 987654321`)
	require.True(t, browser.Eval[bool](t, ctx, page("contract.pdf", 3)+`.classList.contains("cited")`), "the viewer did not move")
	require.Equal(t, 1, browser.Eval[int](t, ctx, `document.querySelectorAll("mark.cited-quote").length`))

	// A page opened without ids drops the highlights with the mark.
	send(`{type: "open_citation", source_page: 1, file_name: "invoice.pdf"}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(page("invoice.pdf", 1)+`.classList.contains("cited")`, 15*time.Second)))
	require.Zero(t, browser.Eval[int](t, ctx, `document.querySelectorAll("mark.cited-quote, .citation-box").length`))
	require.Equal(t, "Signed by both parties", browser.Eval[string](t, ctx, page("contract.pdf", 3)+`.querySelector(".page-text").textContent.trim()`), "the page's text is whole again")

	// A split side by side: the original's four pages beside parts 1-2 and
	// 3-4; the boundary moves a page earlier; the confirmed split reaches
	// the bundle.
	contract := browser.Eval[string](t, ctx, `document.querySelector('.document[data-file-name="contract.pdf"]').dataset.fileId`)
	send(`{type: "open_split", file_id: "` + contract + `", ranges: [{from: 1, to: 5}]}`) // past the document: ignored
	send(`{type: "open_split", file_id: "` + contract + `", ranges: [{from: 1, to: 2}, {from: 3, to: 4}]}`)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`document.querySelectorAll("#split-view .split-part").length === 2`, 15*time.Second)))
	parts := `[...document.querySelectorAll("#split-view .split-part")].map((p) => p.dataset.from + "-" + p.dataset.to + ":" + [...p.querySelectorAll(".split-page")].map((f) => f.dataset.page).join(","))`
	require.Equal(t, 4, browser.Eval[int](t, ctx, `document.querySelectorAll("#split-view .split-original .split-page").length`))
	require.Equal(t, []any{"1-2:1,2", "3-4:3,4"}, browser.Eval[[]any](t, ctx, parts))
	require.Equal(t, 4, browser.Eval[int](t, ctx, `document.querySelectorAll("#split-view .split-original img").length`), "the original's page images beside the parts")
	require.NoError(t, chromedp.Do(ctx, browser.Press(`#split-boundary-1-earlier`)))
	require.Equal(t, []any{"1-1:1", "2-4:2,3,4"}, browser.Eval[[]any](t, ctx, parts))
	require.True(t, browser.Eval[bool](t, ctx, `document.getElementById("split-boundary-1-earlier").disabled`), "part 1 keeps its one page")
	require.NoError(t, chromedp.Do(ctx, browser.Press(`#split-confirm`)))
	require.NoError(t, chromedp.Do(frame, browser.WaitText("#log", `t.includes('"type":"split_confirmed"')`)))
	logged = browser.Eval[string](t, frame, `document.querySelector("#log").textContent`)
	require.Contains(t, logged, `{"type":"split_confirmed","file_id":"`+contract+`","ranges":[{"from":1,"to":1},{"from":2,"to":4}]}`)
	require.NotContains(t, logged, `"to":5`)
	require.False(t, browser.Eval[bool](t, ctx, `document.getElementById("split-view") !== null`), "the split view closes once confirmed")
}
