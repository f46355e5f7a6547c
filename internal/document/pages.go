package document

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/gif"  // image.DecodeConfig reads GIF headers
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG

	_ "golang.org/x/image/tiff" // and TIFF (its first image: tiff.go points it at each page)
	_ "golang.org/x/image/webp" // and WebP

	"github.com/appruntime/appruntime/internal/apperr"
)

// Bounds of what a document may make the platform do.
const (
	// MaxImagePixels refuses images a viewer could not decode without
	// gigabytes of memory (a small PNG can claim 100k × 100k pixels).
	MaxImagePixels = 100_000_000
	// MaxSheets is the most sheets a spreadsheet may have, each a page.
	MaxSheets = 500
)

// Pages counts the pages of a document of contentType (PagesContext
// without a caller's deadline: MaxWork bounds it).
func Pages(data []byte, contentType string) (int, error) {
	return PagesContext(context.Background(), data, contentType)
}

// PagesContext counts the pages of a document of contentType (one of the
// Type constants, as Sniff returned): a PDF's pages, a TIFF's pages (one
// per image directory, tiff.go), one for another image or a text file, a
// spreadsheet's sheets. A document that is not what its type
// says is an invalid error; ctx stops the reading of a PDF.
func PagesContext(ctx context.Context, data []byte, contentType string) (int, error) {
	switch {
	case contentType == TypePDF:
		return PDFPagesContext(ctx, data)
	case contentType == TypeTIFF:
		return tiffPages(data)
	case IsImage(contentType):
		return 1, checkImage(data)
	case IsText(contentType):
		return 1, nil
	case contentType == TypeXLSX:
		wb, err := openWorkbook(data)
		if err != nil {
			return 0, err
		}
		return len(wb.sheets), nil
	}
	return 0, apperr.New(apperr.UnsupportedMedia, "documents of type %s have no pages", contentType)
}

// checkImage reads an image's header: it must decode as its format and
// stay under MaxImagePixels.
func checkImage(data []byte) error {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return apperr.Wrap(err, apperr.Invalid, "the file is not a readable image")
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return apperr.Invalidf("the image is %d × %d pixels; at most %d million pixels", cfg.Width, cfg.Height, MaxImagePixels/1_000_000)
	}
	return nil
}

func tooManyPages(n int) error {
	return apperr.New(apperr.OverBudget, "the document has %d pages; documents of at most %d pages are read", n, MaxPages)
}

// wholeFile marks a refusal that holds for every page of its file (a file
// that cannot be opened, a workbook's shared strings past their budget),
// so that a caller who keeps refusals (capability's page cache) keeps it
// once for the file rather than once per page. Its code and message are
// err's.
type wholeFile struct{ err error }

func (w wholeFile) Error() string { return w.err.Error() }
func (w wholeFile) Unwrap() error { return w.err }

// refusesWholeFile marks err (nil stays nil) as holding for every page.
func refusesWholeFile(err error) error {
	if err == nil {
		return nil
	}
	return wholeFile{err}
}

// WholeFile says whether err, from reading one page, holds for every page
// of the file: reading another page would be refused the same way.
func WholeFile(err error) bool {
	var w wholeFile
	return errors.As(err, &w)
}

func pageOutOfRange(page, pages int) error {
	return apperr.Invalidf("page %d is out of range: the document has %d pages", page, pages)
}
