package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/appruntime/appruntime/internal/apperr"
)

// ocrLanguages are the languages tesseract reads scanned pages in, as its
// -l option takes them ("eng", "eng+deu"); each needs its Debian package
// (tesseract-ocr-eng, …). Unset, it is DefaultOCRLanguages.
var ocrLanguages atomic.Pointer[string]

// DefaultOCRLanguages is OCR_LANGUAGES' default.
const DefaultOCRLanguages = "eng"

// SetOCRLanguages sets the languages of OCR for the process; the platform
// sets them from OCR_LANGUAGES, which internal/config validates. Empty
// restores DefaultOCRLanguages.
func SetOCRLanguages(langs string) {
	if langs == "" {
		langs = DefaultOCRLanguages
	}
	ocrLanguages.Store(&langs)
}

func languages() string {
	if l := ocrLanguages.Load(); l != nil {
		return *l
	}
	return DefaultOCRLanguages
}

// MaxOCRWords caps the word boxes kept for one page.
const MaxOCRWords = 20_000

// Word is one word OCR read, with its box as fractions of the page's
// width and height (0 to 1, from the top left), so that it lands on the
// page's image at any size.
type Word struct {
	Text string  `json:"text"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	W    float64 `json:"w"`
	H    float64 `json:"h"`
}

// ocrPage OCRs page of a document: a PDF page rendered at sizeOCR, or an
// image scaled to at most sizeOCR on its long side. A worker without
// tesseract leaves the page without text (ok false).
func ocrPage(ctx context.Context, data []byte, contentType string, page int) (text Text, ok bool, err error) {
	img, err := RenderPage(ctx, data, contentType, page, sizeOCR)
	if err != nil {
		if isNotImplemented(err) {
			return Text{}, false, nil
		}
		return Text{}, false, err
	}
	text, err = OCR(ctx, img, fmt.Sprintf("reading the text of page %d by OCR", page))
	if isNotImplemented(err) {
		return Text{}, false, nil
	}
	return text, err == nil, err
}

func isNotImplemented(err error) bool {
	var e *apperr.Error
	return errors.As(err, &e) && e.Code == apperr.NotImplemented
}

// OCR reads the text of an image (PNG, JPEG, TIFF) with tesseract in
// the languages of SetOCRLanguages, in the sandbox and under MaxOCRWork, and returns its text
// (words by spaces, lines by "\n", paragraphs by a blank line) with each
// word's box. what names the work in errors.
func OCR(ctx context.Context, img []byte, what string) (Text, error) {
	tsv, err := runTool(ctx, what, MaxOCRWork, img, "tesseract-ocr",
		"tesseract", "stdin", "stdout", "-l", languages(), "--psm", "3", "tsv")
	if err != nil {
		return Text{}, err
	}
	return parseTSV(tsv), nil
}

// parseTSV reads tesseract's TSV: a level-1 row gives the page's size,
// level-5 rows the words with their block, paragraph and line numbers.
func parseTSV(tsv []byte) Text {
	var (
		out            strings.Builder
		pageW, pageH   float64
		words          []Word
		lastBlock      = -1
		lastPar        = -1
		lastLine       = -1
		truncated      bool
		wroteSomething bool
	)
	for _, row := range bytes.Split(tsv, []byte("\n")) {
		f := strings.Split(strings.TrimRight(string(row), "\r"), "\t")
		if len(f) < 12 {
			continue
		}
		level, err := strconv.Atoi(f[0])
		if err != nil {
			continue // the header
		}
		n := make([]int, 10)
		for i := 1; i <= 9; i++ {
			n[i], _ = strconv.Atoi(f[i])
		}
		left, top, width, height := float64(n[6]), float64(n[7]), float64(n[8]), float64(n[9])
		switch {
		case level == 1:
			pageW, pageH = width, height
		case level == 5:
			word := strings.TrimSpace(f[11])
			if word == "" || pageW == 0 || pageH == 0 {
				continue
			}
			block, par, line := n[2], n[3], n[4]
			sep := " "
			switch {
			case !wroteSomething:
				sep = ""
			case block != lastBlock || par != lastPar:
				sep = "\n\n"
			case line != lastLine:
				sep = "\n"
			}
			if out.Len()+len(sep)+len(word) > MaxPageTextBytes {
				truncated = true
				continue
			}
			out.WriteString(sep)
			out.WriteString(word)
			wroteSomething = true
			lastBlock, lastPar, lastLine = block, par, line
			if len(words) < MaxOCRWords {
				words = append(words, Word{Text: word, X: left / pageW, Y: top / pageH, W: width / pageW, H: height / pageH})
			}
		}
	}
	return Text{Text: out.String(), Truncated: truncated, OCR: true, Words: words}
}
