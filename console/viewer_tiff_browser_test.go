package console_test

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/tiff"

	"github.com/appruntime/appruntime/internal/document/documenttest"
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
