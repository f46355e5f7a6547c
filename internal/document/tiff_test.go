package document_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/tiff"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
)

// TestATIFFScanIsAnImagePage: a TIFF (what many scanners write, and what
// browsers do not show) is sniffed from its bytes in either byte order,
// is one page, renders to a PNG the viewer shows, and is OCR'd.
func TestATIFFScanIsAnImagePage(t *testing.T) {
	t.Parallel()
	var scan bytes.Buffer
	require.NoError(t, tiff.Encode(&scan, documenttest.ScanImage("TIFF INVOICE 9042"), &tiff.Options{Compression: tiff.Deflate}))
	ct, err := document.Sniff("scan.bin", "application/octet-stream", scan.Bytes())
	require.NoError(t, err)
	require.Equal(t, document.TypeTIFF, ct)
	require.True(t, document.IsImage(ct))
	ct, err = document.Sniff("x", "", []byte("MM\x00*\x00\x00\x00\x08"))
	require.NoError(t, err)
	require.Equal(t, document.TypeTIFF, ct, "big-endian")
	require.Equal(t, []string{".tif", ".tiff"}, document.Extensions(ct))

	pages, err := document.Pages(scan.Bytes(), document.TypeTIFF)
	require.NoError(t, err)
	require.Equal(t, 1, pages)
	img, err := document.RenderPage(context.Background(), scan.Bytes(), document.TypeTIFF, 1, document.SizeThumb)
	require.NoError(t, err)
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	require.NoError(t, err)
	require.Equal(t, document.SizeThumb, max(cfg.Width, cfg.Height))

	needTool(t, "tesseract", "tesseract-ocr")
	text, err := document.PageText(context.Background(), scan.Bytes(), document.TypeTIFF, 1)
	require.NoError(t, err)
	require.True(t, text.OCR)
	require.Contains(t, text.Text, "9042")
	require.NotEmpty(t, text.Words)
}

// TestAMultiPageTIFFHasAPagePerImage: a TIFF of two scanned sheets is two
// pages, each rendered and OCR'd on its own (before, every page was the
// first sheet and the count was 1); a chain of image directories that
// loops, or a page past MaxImagePixels, is refused.
func TestAMultiPageTIFFHasAPagePerImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first, second := documenttest.ScanImage("FIRST SHEET 1111"), documenttest.ScanImage("SECOND SHEET 2222", "and a second line")
	scan := documenttest.MultiPageTIFF(first, second)
	ct, err := document.Sniff("scan.tif", "", scan)
	require.NoError(t, err)
	require.Equal(t, document.TypeTIFF, ct)
	pages, err := document.Pages(scan, ct)
	require.NoError(t, err)
	require.Equal(t, 2, pages)

	for page, want := range map[int]*image.Gray{1: first, 2: second} {
		img, err := document.RenderPage(ctx, scan, ct, page, document.SizeThumb)
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		require.NoError(t, err)
		b := want.Bounds()
		require.Equal(t, document.SizeThumb, cfg.Width, "page %d", page)
		require.Equal(t, b.Dy()*document.SizeThumb/b.Dx(), cfg.Height, "page %d is its own image", page)
	}
	_, err = document.RenderPage(ctx, scan, ct, 3, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)

	loop := bytes.Clone(scan)
	// The second IFD's next-IFD link (its last 4 bytes) names the first.
	copy(loop[len(loop)-4:], loop[4:8])
	_, err = document.Pages(loop, ct)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	huge := documenttest.MultiPageTIFF(first, image.NewGray(image.Rect(0, 0, 1, 1)))
	// Page 2 claims 20000 × 20000 pixels (its width and height entries).
	i := bytes.LastIndex(huge, []byte{0, 1, 4, 0, 1, 0, 0, 0}) // tag 256, LONG, count 1
	require.Positive(t, i)
	binary.LittleEndian.PutUint32(huge[i+8:], 20000)
	binary.LittleEndian.PutUint32(huge[i+20:], 20000)
	_, err = document.Pages(huge, ct)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.Contains(t, err.Error(), "page 2")

	needTool(t, "tesseract", "tesseract-ocr")
	for page, word := range map[int]string{1: "1111", 2: "2222"} {
		text, err := document.PageText(ctx, scan, ct, page)
		require.NoError(t, err)
		require.True(t, text.OCR)
		require.Contains(t, text.Text, word, "page %d", page)
	}
}
