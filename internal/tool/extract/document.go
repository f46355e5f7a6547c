package extract

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/xuri/excelize/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/tool"
)

// Limits of a document.
const (
	// MaxDocumentBytes is the largest document sent to the model.
	MaxDocumentBytes = 32 << 20
	// MaxPages is the most pages one extraction reads (and bills).
	MaxPages = 500
	// MaxSheetTextBytes caps the CSV text of a spreadsheet's sheets.
	MaxSheetTextBytes = 2 << 20
	// maxUnzippedBytes bounds what a spreadsheet may unpack to.
	maxUnzippedBytes = 256 << 20
)

// Content types the tool reads.
const (
	typePDF  = "application/pdf"
	typeXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
)

var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

var textTypes = []string{"text/plain", "text/csv", "text/markdown", "application/json"}

func init() {
	// pdfcpu would otherwise write a configuration directory under the
	// user's config dir the first time it is used.
	model.ConfigPath = "disable"
}

// contentType is the document's media type without parameters; a missing
// or generic one is sniffed from the bytes and the name.
func contentType(doc *tool.Document) string {
	ct, _, err := mime.ParseMediaType(doc.ContentType)
	if err == nil && ct != "" && ct != "application/octet-stream" {
		return ct
	}
	switch {
	case bytes.HasPrefix(doc.Data, []byte("%PDF-")):
		return typePDF
	case strings.HasSuffix(strings.ToLower(doc.Name), ".xlsx"):
		return typeXLSX
	}
	ct, _, _ = mime.ParseMediaType(http.DetectContentType(doc.Data))
	return ct
}

// read turns a document into the content parts of the model's prompt and
// the pages they hold. sheets names a spreadsheet's sheets to read.
func read(doc *tool.Document, sheets []string) ([]llm.Part, int, error) {
	if len(doc.Data) > MaxDocumentBytes {
		return nil, 0, apperr.Invalidf("the document is larger than %d MiB", MaxDocumentBytes>>20)
	}
	ct := contentType(doc)
	if len(sheets) > 0 && ct != typeXLSX {
		return nil, 0, apperr.Invalidf("input.sheets is for spreadsheets (.xlsx); the document is %s", ct)
	}
	switch {
	case ct == typePDF:
		pages, err := pdfPages(doc.Data)
		if err != nil {
			return nil, 0, err
		}
		return []llm.Part{llm.FilePart(doc.Name, typePDF, doc.Data)}, pages, nil
	case slices.Contains(imageTypes, ct):
		return []llm.Part{llm.ImagePart(ct, doc.Data)}, 1, nil
	case ct == typeXLSX:
		return spreadsheet(doc.Data, sheets)
	case slices.Contains(textTypes, ct):
		return []llm.Part{llm.TextPart(string(doc.Data))}, 1, nil
	}
	return nil, 0, apperr.Invalidf("the document is %s; the tool reads PDF, PNG, JPEG, GIF, WebP, XLSX, CSV, JSON, Markdown and plain text", ct)
}

// pdfPages counts a PDF's pages, with pdfcpu's limits on what a document
// may make it do.
func pdfPages(data []byte) (int, error) {
	conf := model.NewDefaultConfiguration()
	conf.Offline = true
	pages, err := api.PageCount(bytes.NewReader(data), conf)
	if err != nil {
		return 0, apperr.Wrap(err, apperr.Invalid, "the document is not a readable PDF")
	}
	if pages > MaxPages {
		return 0, apperr.Invalidf("the document has %d pages; the tool reads at most %d", pages, MaxPages)
	}
	return pages, nil
}

// spreadsheet renders the named sheets (all when none are named) as CSV
// text parts, one page each.
func spreadsheet(data []byte, sheets []string) ([]llm.Part, int, error) {
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{UnzipSizeLimit: maxUnzippedBytes})
	if err != nil {
		return nil, 0, apperr.Wrap(err, apperr.Invalid, "the document is not a readable spreadsheet")
	}
	defer f.Close()
	all := f.GetSheetList()
	if len(sheets) == 0 {
		sheets = all
	}
	if len(sheets) > MaxPages {
		return nil, 0, apperr.Invalidf("input.sheets names %d sheets; the tool reads at most %d", len(sheets), MaxPages)
	}
	var parts []llm.Part
	size := 0
	for _, name := range sheets {
		if !slices.Contains(all, name) {
			return nil, 0, apperr.Invalidf("input.sheets names %q, which the spreadsheet does not have (it has %s)", name, quoted(all))
		}
		rows, err := f.GetRows(name)
		if err != nil {
			return nil, 0, apperr.Wrap(err, apperr.Invalid, "sheet %q cannot be read", name)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Sheet %q, as CSV:\n", name)
		w := csv.NewWriter(&b)
		if err := w.WriteAll(rows); err != nil {
			return nil, 0, fmt.Errorf("extract: render sheet %q: %w", name, err)
		}
		size += b.Len()
		if size > MaxSheetTextBytes {
			return nil, 0, apperr.Invalidf("the sheets hold more than %d MiB of text; name fewer in input.sheets", MaxSheetTextBytes>>20)
		}
		parts = append(parts, llm.TextPart(b.String()))
	}
	return parts, len(parts), nil
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
