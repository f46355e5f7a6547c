package documenttest

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"strings"
)

// PDFBomb returns a one-page PDF whose page contents name one FlateDecode
// stream of streamBytes spaces refs times (/Contents [5 0 R 5 0 R …]): a
// few tens of KB that a reader decoding each reference anew expands to
// streamBytes × refs bytes of white space, which draws nothing. The
// attack on documents used 64 MiB and 200 references (67 KB).
func PDFBomb(streamBytes int64, refs int) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	chunk := bytes.Repeat([]byte{' '}, 1<<20)
	for left := streamBytes; left > 0; left -= int64(len(chunk)) {
		_, _ = zw.Write(chunk[:min(left, int64(len(chunk)))])
	}
	_ = zw.Close()
	contents := strings.TrimSpace(strings.Repeat("5 0 R ", refs))
	return assemble([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents [" + contents + "] >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.Bytes()),
	})
}

// XLSXBomb returns a spreadsheet of one sheet holding cells inlineStr
// cells of cellBytes letters each, in one row: a small file (the zip
// deflates the repeated letters) whose sheet XML is cells × cellBytes
// bytes. The attack on documents used a 1.27 MB file of 232 MB of cells.
func XLSXBomb(cellBytes, cells int) []byte {
	return xlsx(1, 0, 0, func(w io.Writer) {
		for i := range cells {
			fmt.Fprintf(w, `<c r="%s1" t="inlineStr"><is><t>`, column(i+1))
			repeat(w, 'A', cellBytes)
			_, _ = w.Write([]byte(`</t></is></c>`))
		}
	})
}

// XLSXSharedStringsBomb returns a spreadsheet of sheets sheets, each one
// cell naming shared string 0, whose shared-string table holds n strings
// of stringBytes letters each: a small file whose every sheet reads the
// same table first.
func XLSXSharedStringsBomb(sheets, n, stringBytes int) []byte {
	return xlsx(sheets, n, stringBytes, func(w io.Writer) {
		_, _ = w.Write([]byte(`<c r="A1" t="s"><v>0</v></c>`))
	})
}

// xlsx writes a workbook of sheets sheets whose first row's cells row
// writes, with a shared-string table of shared strings of sharedBytes
// letters each when shared > 0.
func xlsx(sheets, shared, sharedBytes int, row func(io.Writer)) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	file := func(name, body string) {
		w, _ := zw.Create(name)
		_, _ = w.Write([]byte(body))
	}
	var overrides, entries, rels strings.Builder
	for i := 1; i <= sheets; i++ {
		fmt.Fprintf(&overrides, `<Override PartName="/xl/worksheets/sheet%d.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`, i)
		fmt.Fprintf(&entries, `<sheet name="Sheet%d" sheetId="%d" r:id="rId%d"/>`, i, i, i)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>`, i, i)
	}
	if shared > 0 {
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>`, sheets+1)
	}
	file("[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>`+overrides.String()+`</Types>`)
	file("_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`)
	file("xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>`+entries.String()+`</sheets></workbook>`)
	file("xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+rels.String()+`</Relationships>`)
	if shared > 0 {
		w, _ := zw.Create("xl/sharedStrings.xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="%d" uniqueCount="%d">`, shared, shared)
		for range shared {
			_, _ = w.Write([]byte(`<si><t>`))
			repeat(w, 'A', sharedBytes)
			_, _ = w.Write([]byte(`</t></si>`))
		}
		_, _ = w.Write([]byte(`</sst>`))
	}
	for i := 1; i <= sheets; i++ {
		w, _ := zw.Create(fmt.Sprintf("xl/worksheets/sheet%d.xml", i))
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">`))
		row(w)
		_, _ = w.Write([]byte(`</row></sheetData></worksheet>`))
	}
	_ = zw.Close()
	return b.Bytes()
}

// repeat writes n bytes c.
func repeat(w io.Writer, c byte, n int) {
	chunk := bytes.Repeat([]byte{c}, min(n, 1<<20))
	for left := n; left > 0; left -= len(chunk) {
		_, _ = w.Write(chunk[:min(left, len(chunk))])
	}
}

// column is the spreadsheet name of column n (1-based): A, …, Z, AA, ….
func column(n int) string {
	s := ""
	for ; n > 0; n = (n - 1) / 26 {
		s = string(rune('A'+(n-1)%26)) + s
	}
	return s
}
