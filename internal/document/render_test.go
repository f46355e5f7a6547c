package document_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
)

// needTool skips on a machine without the Debian package that brings
// prog, outside CI: scripts/services.sh installs it everywhere else.
func needTool(t *testing.T, prog, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		require.Empty(t, os.Getenv("CI"), "%s (Debian package %s) is not installed: scripts/services.sh installs it", prog, pkg)
		t.Skipf("%s is not installed: run scripts/services.sh", prog)
	}
}

func decodePNG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	return img
}

func TestRenderPageSizes(t *testing.T) {
	t.Parallel()
	needTool(t, "pdftoppm", "poppler-utils")
	ctx := context.Background()
	chromium := chromiumPDF(t)
	for _, size := range []int{document.SizeThumb, document.SizePage} {
		start := time.Now()
		out, err := document.RenderPage(ctx, chromium, document.TypePDF, 2, size)
		require.NoError(t, err)
		t.Logf("page 2 at %d px: %s, %d bytes", size, time.Since(start), len(out))
		b := decodePNG(t, out).Bounds()
		// A letter page: its long side is its height.
		require.Equal(t, size, b.Dy())
		require.InDelta(t, float64(size)*8.5/11, float64(b.Dx()), 2)
	}
	// A page of a thousand-to-one shape still fits the size's square.
	tall := bytes.Replace(documenttest.PDF("x"), []byte("/MediaBox [0 0 612 792]"), []byte("/MediaBox [0 0 10 14400]"), 1)
	out, err := document.RenderPage(ctx, tall, document.TypePDF, 1, document.SizePage)
	require.NoError(t, err)
	b := decodePNG(t, out).Bounds()
	require.LessOrEqual(t, b.Dx()*b.Dy(), document.SizePage*document.SizePage)

	img, err := document.RenderPage(ctx, encodeImage(t, "png", 3000, 1000), document.TypePNG, 1, document.SizeThumb)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 200, 66), decodePNG(t, img).Bounds())

	_, err = document.RenderPage(ctx, chromium, document.TypePDF, 4, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	_, err = document.RenderPage(ctx, documenttest.PDFBomb(64<<20, 200), document.TypePDF, 1, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
	_, err = document.RenderPage(ctx, []byte("a,b"), document.TypeCSV, 1, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.UnsupportedMedia), "%v", err)
}

// TestRenderPageOfAHostilePDFIsBounded: a page whose drawing never ends
// within MaxRenderWork (a million overlapping filled paths) is an
// over_budget error, and the renderer is gone when it returns.
//
// Not parallel: it keeps a core busy for MaxRenderWork, which would eat
// into the wall-time budgets (MaxWork) the other tests of the package
// measure; sequential tests run before the parallel ones start.
func TestRenderPageOfAHostilePDFIsBounded(t *testing.T) {
	needTool(t, "pdftoppm", "poppler-utils")
	var ops strings.Builder
	for i := range 400_000 {
		fmt.Fprintf(&ops, "%d %d m %d %d l %d %d l h f\n", i%600, i%700, (i*7)%600, 700-i%700, 600-i%600, (i*3)%700)
	}
	hostile := documenttest.PDFWithContent(ops.String())
	start := time.Now()
	_, err := document.RenderPage(context.Background(), hostile, document.TypePDF, 1, document.SizePage)
	t.Logf("hostile page: %s: %v", time.Since(start), err)
	if err != nil {
		require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
	}
	require.Less(t, time.Since(start), document.MaxRenderWork+document.MaxWork+5*time.Second)
}

// TestScannedPageIsOCRd: a page that is only an image of text, which the
// test draws, has its text read by OCR, with word boxes, and the result
// says so; so does an image upload.
// Not parallel, like TestRenderPageOfAHostilePDFIsBounded: OCR is CPU-bound.
func TestScannedPageIsOCRd(t *testing.T) {
	needTool(t, "pdftoppm", "poppler-utils")
	needTool(t, "tesseract", "tesseract-ocr")
	ctx := context.Background()
	lines := []string{"INVOICE NUMBER 4711", "TOTAL DUE 1234.50 EUR"}
	scan := documenttest.ScannedPDF(lines...)
	start := time.Now()
	text, err := document.PageText(ctx, scan, document.TypePDF, 1)
	require.NoError(t, err)
	t.Logf("OCR of a scanned PDF page: %s", time.Since(start))
	require.True(t, text.OCR)
	require.Contains(t, text.Text, "INVOICE NUMBER 4711")
	require.Contains(t, text.Text, "1234.50")
	var found bool
	for _, w := range text.Words {
		require.True(t, w.X >= 0 && w.Y >= 0 && w.X+w.W <= 1.001 && w.Y+w.H <= 1.001, "%+v", w)
		if w.Text == "4711" {
			found = true
			// The first line, right of its middle.
			require.Less(t, w.Y, 0.5)
			require.Greater(t, w.X, 0.4)
		}
	}
	require.True(t, found, "%+v", text.Words)

	start = time.Now()
	text, err = document.PageText(ctx, documenttest.ScanPNG(lines...), document.TypePNG, 1)
	require.NoError(t, err)
	t.Logf("OCR of a PNG: %s", time.Since(start))
	require.True(t, text.OCR)
	require.Contains(t, text.Text, "TOTAL DUE")

	// A page with a text layer is not OCR'd.
	text, err = document.PageText(ctx, chromiumPDF(t), document.TypePDF, 1)
	require.NoError(t, err)
	require.False(t, text.OCR)
}
