package document

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strconv"

	"golang.org/x/image/draw"

	"github.com/appruntime/appruntime/internal/apperr"
)

// The sizes a page is rendered at, by the long side of its image in
// pixels: a page image is at most Size × Size pixels whatever the page's
// shape (a hostile 1 × 10000 inch page included).
const (
	// SizeThumb is a thumbnail in the viewer's page strip.
	SizeThumb = 200
	// SizePage is a page in the viewer at 100 % (a letter page's width is
	// then about 1240 px, 150 dpi).
	SizePage = 1600
	// sizeOCR is what a page is rendered at to be OCR'd (about 200 dpi on
	// a letter page, what tesseract reads best).
	sizeOCR = 2200
)

// Sizes are the sizes the viewer asks for, by name.
var Sizes = map[string]int{"thumb": SizeThumb, "page": SizePage}

// RenderPage renders page (1-based) of a document of contentType as a
// PNG whose long side is size pixels: a PDF page with poppler's pdftoppm,
// in the sandbox and under MaxRenderWork; an image (page 1, or a TIFF's
// page) scaled here.
// A page out of range is an invalid error, a document past a budget an
// over_budget one; other types have no page images (unsupported_media).
func RenderPage(ctx context.Context, data []byte, contentType string, page, size int) ([]byte, error) {
	if size < 16 || size > sizeOCR {
		return nil, apperr.Invalidf("a page image is 16 to %d pixels on its long side, not %d", sizeOCR, size)
	}
	switch {
	case contentType == TypePDF:
		pages, err := PDFPagesContext(ctx, data)
		if err != nil {
			return nil, err
		}
		if page < 1 || page > pages {
			return nil, pageOutOfRange(page, pages)
		}
		n := strconv.Itoa(page)
		return runTool(ctx, fmt.Sprintf("rendering page %d", page), MaxRenderWork, data, "poppler-utils",
			"pdftoppm", "-f", n, "-l", n, "-scale-to", strconv.Itoa(size), "-png", "-q", "-")
	case IsImage(contentType):
		img, err := imagePage(data, contentType, page)
		if err != nil {
			return nil, err
		}
		return scaleImage(img, size)
	}
	return nil, apperr.New(apperr.UnsupportedMedia, "documents of type %s have no page images", contentType)
}

// scaleImage decodes an image (its size checked against MaxImagePixels
// first) and encodes it as a PNG whose long side is size pixels, or its
// own when smaller.
func scaleImage(data []byte, size int) ([]byte, error) {
	if err := checkImage(data); err != nil {
		return nil, err
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, apperr.Wrap(err, apperr.Invalid, "the file is not a readable image")
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if long := max(w, h); long > size {
		w, h = max(w*size/long, 1), max(h*size/long, 1)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	var out bytes.Buffer
	if err := png.Encode(&out, dst); err != nil {
		return nil, fmt.Errorf("document: encode page image: %w", err)
	}
	return out.Bytes(), nil
}
