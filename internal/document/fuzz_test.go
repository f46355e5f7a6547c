package document_test

import (
	"context"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
)

// FuzzPDF feeds arbitrary bytes to everything that reads a PDF: none may
// panic, every refusal is an apperr error, and text stays within its cap.
func FuzzPDF(f *testing.F) {
	chromium, err := os.ReadFile("testdata/chromium-3-pages.pdf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(chromium)
	f.Add(documenttest.PDF("Hello (world)\nline two\n\npara", "page two"))
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what string, err error) {
			if err != nil && apperr.CodeOf(err) == apperr.Internal {
				t.Fatalf("%s: an error without a code: %v", what, err)
			}
		}
		_, err := document.PDFPages(data)
		check("pages", err)
		text, err := document.PageText(context.Background(), data, document.TypePDF, 1)
		check("text", err)
		if len(text.Text) > document.MaxPageTextBytes || !utf8.ValidString(text.Text) {
			t.Fatalf("page text of %d bytes, valid UTF-8 %v", len(text.Text), utf8.ValidString(text.Text))
		}
		err = document.Split(context.Background(), data, []document.Range{{From: 1, To: 1}}, func(int, document.Range, []byte) error { return nil })
		check("split", err)
	})
}
