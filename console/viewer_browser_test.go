package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// selectionProbe is a bundle that shows the document_selection messages
// the host sends it as JSON.
const selectionProbe = `<!doctype html><html><body>
<p id="state">waiting</p><pre id="selection"></pre><p id="host-state"></p>
<button id="select">select</button>
<script>
window.addEventListener("message", (e) => {
  if (e.source !== parent) return;
  const m = e.data || {};
  if (m.type === "init") document.getElementById("state").textContent = "init";
  if (m.type === "document_selection") document.getElementById("selection").textContent = JSON.stringify(m);
  if (m.type === "host_state") document.getElementById("host-state").textContent = m.selectionMode;
});
document.getElementById("select").onclick = () => parent.postMessage({ type: "set_selection_mode", enabled: true }, "*");
parent.postMessage({ type: "ready" }, "*");
</script></body></html>`

// TestViewerShowsPageImagesAndFindsScannedText: the reviewer's viewer shows
// each PDF page as a rendered image with thumbnails; a scanned page (an
// image of text the test draws, no text layer) is OCR'd, so find-in-
// document finds its words and marks them on the image; PageDown moves to
// the next page; selecting OCR'd words sends the bundle the page and the
// selection's box.
func TestViewerShowsPageImagesAndFindsScannedText(t *testing.T) {
	t.Parallel()
	for _, prog := range []string{"pdftoppm", "tesseract"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed: run scripts/services.sh", prog)
		}
	}
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, selectionProbe, "document_selection")
	id := tool.task(t, "Viewer", 10)
	_, err := s.P.Files.Upload(context.Background(), id, "scan.pdf", "",
		bytes.NewReader(documenttest.ScannedPDF("INVOICE NUMBER 4711", "TOTAL DUE 1234.50 EUR")))
	require.NoError(t, err)

	start := time.Now()
	location := reviewNextSignedIn(t, ctx, s, f.ReviewerEmail)
	require.Equal(t, s.URL+"/review/tasks/"+id, location)
	t.Logf("the host page with a scanned page (OCR'd on first view): %s", time.Since(start))

	// Every page image and thumbnail renders (naturalWidth > 0).
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`(() => {
		const imgs = [...document.querySelectorAll(".page-image, .thumb img")];
		imgs.forEach((i) => i.scrollIntoView());
		return imgs.length === 6 && imgs.every((i) => i.complete && i.naturalWidth > 0);
	})()`, 60*time.Second)))
	require.Equal(t, 1600, browser.Eval[int](t, ctx, `document.querySelector(".page-image").naturalHeight`), "a letter page at 1600 px on its long side")
	require.Equal(t, 200, browser.Eval[int](t, ctx, `document.querySelector(".thumb img").naturalHeight`))
	require.Equal(t, "Page 1 · text read by OCR", browser.Eval[string](t, ctx,
		`document.querySelector('.document[data-file-name="scan.pdf"] .page p').textContent`))

	// Find-in-document finds the scanned page's words.
	require.Equal(t, "1 of 1 page", browser.Eval[string](t, ctx, `(() => {
		const input = document.getElementById("viewer-find");
		input.value = "4711";
		input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
		return document.getElementById("find-status").textContent;
	})()`))
	require.Equal(t, "scan.pdf", browser.Eval[string](t, ctx, `document.querySelector(".page.found-current").closest(".document").getAttribute("data-file-name")`))
	require.Equal(t, "4711", browser.Eval[string](t, ctx, `document.querySelector(".word.found").textContent.trim()`))
	require.True(t, browser.Eval[bool](t, ctx, `(() => {
		const w = document.querySelector(".word.found").getBoundingClientRect();
		const c = document.querySelector(".word.found").closest(".page-canvas").getBoundingClientRect();
		return w.width > 0 && w.left > c.left + c.width / 3 && w.top < c.top + c.height / 2;
	})()`), "the word sits where the image shows it: right on the first line")

	// PageDown moves to the next page (from the text PDF's first page).
	browser.Eval[bool](t, ctx, `(document.querySelector(".page").scrollIntoView({ block: "start" }), true)`)
	require.Equal(t, "2", browser.Eval[string](t, ctx, `(() => {
		document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "PageDown", bubbles: true }));
		return document.querySelector(".thumb.current").getAttribute("data-page");
	})()`))

	// Zoom widens the page.
	before := browser.Eval[float64](t, ctx, `document.querySelector(".page-canvas").getBoundingClientRect().width`)
	after := browser.Eval[float64](t, ctx, `(document.getElementById("zoom-in").click(), document.querySelector(".page-canvas").getBoundingClientRect().width)`)
	require.InDelta(t, before*1.25, after, 2)

	// Selecting OCR'd words hands the bundle the page and the box.
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+tool.BundleID+"/")
	require.NoError(t, chromedp.Do(frame,
		browser.Poll(`document.querySelector("#state").textContent === "init"`, 15*time.Second),
		chromedp.Click(chromedp.CSS(`#select`)),
		browser.Poll(`document.querySelector("#host-state").textContent === "text"`, 10*time.Second),
	))
	browser.Eval[bool](t, ctx, `(() => {
		const w = document.querySelector(".word.found");
		w.scrollIntoView();
		const r = document.createRange(); r.selectNodeContents(w);
		const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r);
		document.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
		return true;
	})()`)
	require.NoError(t, chromedp.Do(frame, browser.Poll(`document.querySelector("#selection").textContent !== ""`, 10*time.Second)))
	raw, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#selection`)))
	require.NoError(t, err)
	var sel struct {
		Text  string
		Page  int
		Label string
		Box   *struct{ X, Y, W, H float64 }
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &sel), raw)
	require.Equal(t, "4711", sel.Text)
	require.Equal(t, 1, sel.Page)
	require.Equal(t, "scan.pdf", sel.Label)
	require.NotNil(t, sel.Box, raw)
	require.True(t, sel.Box.X > 0.3 && sel.Box.Y < 0.5 && sel.Box.W > 0 && sel.Box.H > 0, raw)

	// The page images are the held task's: another task's are refused.
	status := browser.Eval[int](t, ctx, `(() => { const x = new XMLHttpRequest();
		x.open("GET", "/review/tasks/`+models.NewID()+`/files/`+models.NewID()+`/pages/1?size=thumb", false); x.send(); return x.status; })()`)
	require.Contains(t, []int{403, 404}, status)
	status = browser.Eval[int](t, ctx, `(() => { const x = new XMLHttpRequest();
		x.open("GET", document.querySelector(".page-image").getAttribute("src").replace("size=page", "size=huge"), false); x.send(); return x.status; })()`)
	require.Equal(t, 400, status)
}
