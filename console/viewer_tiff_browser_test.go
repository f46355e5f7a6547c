package console_test

import (
	"bytes"
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/tiff"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// TestViewerShowsATIFFScan: a TIFF task file (which browsers cannot show
// themselves) gets the viewer like a PNG: its page as a rendered image with
// its thumbnail, its text read by OCR and found by find-in-document.
func TestViewerShowsATIFFScan(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Skip("tesseract is not installed: run scripts/services.sh")
	}
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, selectionProbe, "document_selection")
	id := tool.task(t, "TIFF viewer", 10)
	var scan bytes.Buffer
	require.NoError(t, tiff.Encode(&scan, documenttest.ScanImage("DELIVERY NOTE 5150"), &tiff.Options{Compression: tiff.Deflate}))
	file, err := s.P.Files.Upload(context.Background(), id, "delivery.tiff", "image/tiff", &scan)
	require.NoError(t, err)
	require.Equal(t, "image/tiff", file.ContentType)

	require.Equal(t, s.URL+"/review/tasks/"+id, reviewNextSignedIn(t, ctx, s, f.ReviewerEmail))
	doc := `document.querySelector('.document[data-file-name="delivery.tiff"]')`
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`(() => {
		const d = `+doc+`;
		if (!d) return false;
		const imgs = [...d.querySelectorAll(".page-image")].concat([...document.querySelectorAll('.thumb img')].filter((i) => i.src.includes("`+file.ID+`")));
		imgs.forEach((i) => i.scrollIntoView());
		return imgs.length === 2 && imgs.every((i) => i.complete && i.naturalWidth > 0);
	})()`, 60*time.Second)), "the TIFF's page and thumbnail render as PNGs")
	require.NoError(t, chromedp.Do(ctx, browser.Poll(doc+`.querySelector(".page p").textContent === "Page 1 · text read by OCR"`, 60*time.Second)))
	require.Equal(t, "1 of 1 page", browser.Eval[string](t, ctx, `(() => {
		const input = document.getElementById("viewer-find");
		input.value = "5150";
		input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
		return document.getElementById("find-status").textContent;
	})()`))
	require.Equal(t, "delivery.tiff", browser.Eval[string](t, ctx, `document.querySelector(".page.found-current").closest(".document").getAttribute("data-file-name")`))
}

// TestViewerShowsPagesWhileThePageReadersAreBusy: while the workspace holds
// its whole share of page renderings (taken here by another replica's
// gate), a scanned page's text waits DOCUMENT_RENDER_WAIT and is not read,
// and the review page still shows the task, saying so, instead of an error.
func TestViewerShowsPagesWhileThePageReadersAreBusy(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm is not installed: run scripts/services.sh")
	}
	ctx := browser.New(t)
	s := newStack(t, func(c *config.Config) {
		c.Tools.DocumentRenderShare, c.Tools.DocumentRenderWait = 1, 200*time.Millisecond
	})
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, selectionProbe, "document_selection")
	id := tool.task(t, "Busy viewer", 10)
	_, err := s.P.Files.Upload(context.Background(), id, "busy.pdf", "", bytes.NewReader(documenttest.ScannedPDF("NOT READ YET")))
	require.NoError(t, err)
	other := limit.NewWorkGate(limit.WorkGateOptions{What: "page renderings", Redis: s.P.Options.Redis, KeyPrefix: s.P.Options.KeyPrefix,
		Process: 1, Share: 1, Wait: 100 * time.Millisecond})
	acquired, err := other.Acquire(context.Background(), s.Tenant.Workspace.ID, time.Minute)
	require.NoError(t, err)
	held := sync.OnceFunc(acquired)
	defer held()

	require.Equal(t, s.URL+"/review/tasks/"+id, reviewNextSignedIn(t, ctx, s, f.ReviewerEmail))
	require.Equal(t, "Page 1 · text not read: the page readers are busy, reload in a moment", browser.Eval[string](t, ctx,
		`document.querySelector('.document[data-file-name="busy.pdf"] .page p').textContent`))
	// Its image was refused too; once the readers are free it comes
	// without a reload.
	img := `document.querySelector('.document[data-file-name="busy.pdf"] .page-image')`
	require.NoError(t, chromedp.Do(ctx, browser.Poll(img+`.complete`, 10*time.Second)))
	require.Zero(t, browser.Eval[int](t, ctx, img+`.naturalWidth`), "the busy page's image was refused")
	held()
	require.NoError(t, chromedp.Do(ctx, browser.Poll(img+`.naturalWidth > 0`, 20*time.Second)), "the image is asked for again")
}
