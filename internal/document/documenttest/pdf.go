// Package documenttest builds small, valid documents for tests: PDFs of
// any number of pages with known text, so that page counts, splits and text
// extraction are checked against what was written.
package documenttest

import (
	"bytes"
	"fmt"
	"strings"
)

// PDF returns a PDF 1.4 document with one page per element of pages; each
// page shows its lines (split on "\n") in Helvetica, top to bottom, and a
// blank line starts a new paragraph (a larger gap). Text is Latin-1.
func PDF(pages ...string) []byte {
	contents := make([]string, len(pages))
	for i, text := range pages {
		contents[i] = pageContent(text)
	}
	return pdfOf(contents)
}

// PDFWithContent returns a one-page PDF whose page's content stream is
// content, uncompressed, with Helvetica as /F1.
func PDFWithContent(content string) []byte { return pdfOf([]string{content}) }

// pdfOf writes a PDF with one page per content stream.
func pdfOf(pages []string) []byte {
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	for i, content := range pages {
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
	}
	return assemble(objs)
}

// assemble writes a PDF 1.4 file of objs, numbered from 1 (the first the
// catalog), with its cross-reference table and trailer.
func assemble(objs []string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, body := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, body)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// pageContent draws lines with Td moves: 16 points per line, 32 across a
// paragraph break.
func pageContent(text string) string {
	var c strings.Builder
	c.WriteString("BT /F1 12 Tf 72 720 Td")
	gap := 0
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			gap += 16
			continue
		}
		if i > 0 {
			fmt.Fprintf(&c, " 0 %d Td", -(16 + gap))
		}
		gap = 0
		fmt.Fprintf(&c, " (%s) Tj", escape(line))
	}
	c.WriteString(" ET")
	return c.String()
}

// escape writes s as the bytes of a PDF literal string in WinAnsi
// (Latin-1 for the letters tests use); other runes become '?'.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == '(' || r == ')':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r > 0xff:
			b.WriteByte('?')
		default:
			b.WriteByte(byte(r))
		}
	}
	return b.String()
}
