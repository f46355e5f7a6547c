package extract

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
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
)

// Content types the tool reads.
const (
	typePDF  = document.TypePDF
	typeXLSX = document.TypeXLSX
)

var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

var textTypes = []string{"text/plain", "text/csv", "text/markdown", "application/json"}

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
// the pages they hold. sheets names a spreadsheet's sheets to read. The
// document is read under internal/document's budgets, ctx (the job's)
// stopping the reading: a document past one is an over_budget error (422),
// which running the job again would repeat.
func read(ctx context.Context, doc *tool.Document, sheets []string) ([]llm.Part, int, error) {
	if len(doc.Data) > MaxDocumentBytes {
		return nil, 0, apperr.Invalidf("the document is larger than %d MiB", MaxDocumentBytes>>20)
	}
	ct := contentType(doc)
	if len(sheets) > 0 && ct != typeXLSX {
		return nil, 0, apperr.Invalidf("input.sheets is for spreadsheets (.xlsx); the document is %s", ct)
	}
	switch {
	case ct == typePDF:
		pages, err := pdfPages(ctx, doc.Data)
		if err != nil {
			return nil, 0, err
		}
		return withOCR([]llm.Part{llm.FilePart(doc.Name, typePDF, doc.Data)}, doc), pages, nil
	case slices.Contains(imageTypes, ct):
		return withOCR([]llm.Part{llm.ImagePart(ct, doc.Data)}, doc), 1, nil
	case ct == typeXLSX:
		return spreadsheet(ctx, doc.Data, sheets)
	case slices.Contains(textTypes, ct):
		return []llm.Part{llm.TextPart(string(doc.Data))}, 1, nil
	}
	return nil, 0, apperr.Invalidf("the document is %s; the tool reads PDF, PNG, JPEG, GIF, WebP, XLSX, CSV, JSON, Markdown and plain text", ct)
}

// withOCR adds to a scanned document's parts the text OCR read on its
// pages without a text layer (tool.Document.OCR), as one text part naming
// each page: a model that reads a PDF's text layer only, or reads an image
// less well than OCR, still sees the scan's words.
func withOCR(parts []llm.Part, doc *tool.Document) []llm.Part {
	if len(doc.OCR) == 0 {
		return parts
	}
	var b strings.Builder
	b.WriteString("Text read by OCR from the document's pages that have no text layer (scans):")
	for _, p := range doc.OCR {
		fmt.Fprintf(&b, "\n\n--- Page %d ---\n%s", p.Page, p.Text)
	}
	return append(parts, llm.TextPart(b.String()))
}

// pdfPages counts a PDF's pages after the metered pass over its contents
// (document.PDFPagesContext): a PDF whose contents decode past the
// document's budget is refused before the model is sent it.
func pdfPages(ctx context.Context, data []byte) (int, error) {
	pages, err := document.PDFPagesContext(ctx, data)
	if err != nil {
		return 0, err
	}
	if pages > MaxPages {
		return 0, apperr.Invalidf("the document has %d pages; the tool reads at most %d", pages, MaxPages)
	}
	return pages, nil
}

// spreadsheet renders the named sheets (all when none are named) as CSV
// text parts, one page each, streaming each sheet (document.SheetText) up
// to what is left of MaxSheetTextBytes: a sheet that holds more is an
// over_budget error, found without reading the rest of it.
func spreadsheet(ctx context.Context, data []byte, sheets []string) ([]llm.Part, int, error) {
	all, err := document.SheetNames(data)
	if err != nil {
		return nil, 0, err
	}
	if len(sheets) == 0 {
		sheets = all
	}
	if len(sheets) > MaxPages {
		return nil, 0, apperr.Invalidf("input.sheets names %d sheets; the tool reads at most %d", len(sheets), MaxPages)
	}
	var parts []llm.Part
	size := 0
	for _, name := range sheets {
		i := slices.Index(all, name)
		if i < 0 {
			return nil, 0, apperr.Invalidf("input.sheets names %q, which the spreadsheet does not have (it has %s)", name, quoted(all))
		}
		head := fmt.Sprintf("Sheet %q, as CSV:\n", name)
		size += len(head)
		left := MaxSheetTextBytes - size
		if left <= 0 {
			return nil, 0, tooMuchSheetText()
		}
		text, err := document.SheetText(ctx, data, i+1, left)
		if err != nil {
			return nil, 0, err
		}
		if text.Truncated {
			return nil, 0, tooMuchSheetText()
		}
		size += len(text.Text)
		parts = append(parts, llm.TextPart(head+text.Text))
	}
	return parts, len(parts), nil
}

func tooMuchSheetText() error {
	return apperr.New(apperr.OverBudget, "the sheets hold more than %d MiB of text, the most one extraction reads; name fewer in input.sheets", MaxSheetTextBytes>>20)
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
