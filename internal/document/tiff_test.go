package document_test

import (
	"bytes"
	"context"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/tiff"

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
