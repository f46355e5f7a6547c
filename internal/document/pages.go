package document

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig reads GIF headers
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG

	"github.com/xuri/excelize/v2"
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
	// maxUnzippedBytes bounds what a spreadsheet may unpack to.
	maxUnzippedBytes = 256 << 20
)

// Pages counts the pages of a document of contentType (one of the Type
// constants, as Sniff returned): a PDF's pages, one for an image or a text
// file, a spreadsheet's sheets. A document that is not what its type says
// is an invalid error.
func Pages(data []byte, contentType string) (int, error) {
	switch {
	case contentType == TypePDF:
		return PDFPages(data)
	case IsImage(contentType):
		return 1, checkImage(data)
	case IsText(contentType):
		return 1, nil
	case contentType == TypeXLSX:
		f, err := openSpreadsheet(data)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return len(f.GetSheetList()), nil
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

func openSpreadsheet(data []byte) (*excelize.File, error) {
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{UnzipSizeLimit: maxUnzippedBytes})
	if err != nil {
		return nil, apperr.Wrap(err, apperr.Invalid, "the file is not a readable spreadsheet")
	}
	if n := len(f.GetSheetList()); n > MaxSheets {
		_ = f.Close()
		return nil, apperr.Invalidf("the spreadsheet has %d sheets; at most %d", n, MaxSheets)
	}
	return f, nil
}

// sheetText renders sheet n (1-based) of a spreadsheet as CSV.
func sheetText(data []byte, n int) (Text, error) {
	f, err := openSpreadsheet(data)
	if err != nil {
		return Text{}, err
	}
	defer f.Close()
	sheets := f.GetSheetList()
	if n < 1 || n > len(sheets) {
		return Text{}, pageOutOfRange(n, len(sheets))
	}
	rows, err := f.GetRows(sheets[n-1])
	if err != nil {
		return Text{}, apperr.Wrap(err, apperr.Invalid, "sheet %q cannot be read", sheets[n-1])
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return Text{}, fmt.Errorf("document: render sheet %q: %w", sheets[n-1], err)
	}
	return capText(b.String()), nil
}

func pageOutOfRange(page, pages int) error {
	return apperr.Invalidf("page %d is out of range: the document has %d pages", page, pages)
}
