package document_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
)

// chromiumPDF is a three-page invoice printed by Chromium from
// testdata/chromium-3-pages.html: embedded subset fonts (Type0,
// Identity-H, ToUnicode maps) and kerning moves, as real documents have.
func chromiumPDF(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/chromium-3-pages.pdf")
	require.NoError(t, err)
	return data
}

func encodeImage(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	switch format {
	case "png":
		require.NoError(t, png.Encode(&b, img))
	case "jpeg":
		require.NoError(t, jpeg.Encode(&b, img, nil))
	case "gif":
		require.NoError(t, gif.Encode(&b, img, nil))
	}
	return b.Bytes()
}

// pngClaiming is the start of a PNG whose header claims w × h pixels: what
// a decompression bomb looks like to a reader of headers.
func pngClaiming(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 0, 0, 0, 0) // 8-bit greyscale
	out := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	out = append(out, ihdr...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(ihdr))
}

// webp1x1 is a 1×1 lossless WebP (there is no WebP encoder in Go).
var webp1x1, _ = base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")

func spreadsheet(t *testing.T, sheets ...string) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, name := range sheets {
		if i == 0 {
			require.NoError(t, f.SetSheetName("Sheet1", name))
		} else {
			_, err := f.NewSheet(name)
			require.NoError(t, err)
		}
		require.NoError(t, f.SetSheetRow(name, "A1", &[]any{"sku", "qty"}))
		require.NoError(t, f.SetSheetRow(name, "A2", &[]any{name + "-1", 4}))
	}
	b, err := f.WriteToBuffer()
	require.NoError(t, err)
	return b.Bytes()
}

func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, n := range names {
		f, err := w.Create(n)
		require.NoError(t, err)
		_, _ = f.Write([]byte("<x/>"))
	}
	require.NoError(t, w.Close())
	return b.Bytes()
}

func TestSniff(t *testing.T) {
	t.Parallel()
	pdf := documenttest.PDF("one")
	xlsx := spreadsheet(t, "Orders")
	cases := []struct {
		name, file, declared string
		data                 []byte
		want                 string // a content type, or the start of the 415 message
	}{
		{"pdf", "invoice.pdf", "application/pdf", pdf, document.TypePDF},
		{"pdf declared as anything", "invoice", "application/octet-stream", pdf, document.TypePDF},
		{"pdf named and declared as html: the bytes win", "invoice.html", "text/html", pdf, document.TypePDF},
		{"pdf after white space", "scan.pdf", "", append([]byte("\r\n"), pdf...), document.TypePDF},
		{"png", "a.png", "image/png", encodeImage(t, "png", 2, 2), document.TypePNG},
		{"png declared as jpeg", "a.jpg", "image/jpeg", encodeImage(t, "png", 2, 2), document.TypePNG},
		{"jpeg", "a.jpeg", "", encodeImage(t, "jpeg", 2, 2), document.TypeJPEG},
		{"gif", "a.gif", "", encodeImage(t, "gif", 2, 2), document.TypeGIF},
		{"webp", "a.webp", "", webp1x1, document.TypeWebP},
		{"xlsx", "orders.xlsx", "", xlsx, document.TypeXLSX},
		{"xlsx with any name", "orders.zip", "application/zip", xlsx, document.TypeXLSX},
		{"zip that is no workbook", "orders.xlsx", document.TypeXLSX, zipOf(t, "word/document.xml", "[Content_Types].xml"), "the file is a ZIP archive that is not an XLSX"},
		{"csv by name", "rows.csv", "", []byte("a,b\n1,2\n"), document.TypeCSV},
		{"csv by declared type", "rows", "text/csv; charset=utf-8", []byte("a,b\n1,2\n"), document.TypeCSV},
		{"markdown", "notes.md", "", []byte("# Notes\n"), document.TypeMarkdown},
		{"json", "data.json", "", []byte(`{"a": 1}`), document.TypeJSON},
		{"json that is not JSON is text", "data.json", "application/json", []byte(`{"a": `), document.TypeText},
		{"plain text", "readme", "", []byte("hello\n"), document.TypeText},
		{"text with a script later on stays text", "log.txt", "text/plain", []byte("line 1\n<script>alert(1)</script>\n"), document.TypeText},
		{"text with a BOM", "notes.txt", "", []byte("\xef\xbb\xbfhello"), document.TypeText},
		{"html", "page.txt", "text/plain", []byte("<!doctype html><script>alert(1)</script>"), "HTML, SVG, XML, CSS and script files are not accepted"},
		{"html after white space", "page", "", []byte("\n\n  <html><body>x"), "HTML, SVG, XML, CSS and script files"},
		{"text declared as html", "page", "text/html", []byte("hello"), "HTML, SVG, XML, CSS and script files"},
		{"text named .html", "page.HTML", "text/plain", []byte("hello"), "HTML, SVG, XML, CSS and script files"},
		{"svg", "logo.svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "HTML, SVG, XML, CSS and script files"},
		{"svg declared as png", "logo.png", "image/png", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`), "HTML, SVG, XML, CSS and script files"},
		{"javascript", "app.js", "", []byte("alert(1)"), "HTML, SVG, XML, CSS and script files"},
		{"javascript declared", "app.txt", "application/javascript", []byte("alert(1)"), "HTML, SVG, XML, CSS and script files"},
		{"xml", "feed.xml", "", []byte("<?xml version=\"1.0\"?><feed/>"), "HTML, SVG, XML, CSS and script files"},
		{"binary", "a.exe", "application/octet-stream", []byte("MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff"), "the file's content is application/octet-stream"},
		{"legacy xls", "old.xls", "application/vnd.ms-excel", []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00"), "the file's content is"},
		{"utf-16 text", "notes.txt", "text/plain", []byte("\xff\xfeh\x00i\x00"), "text files must be UTF-8"},
		{"latin-1 text", "notes.txt", "text/plain", []byte("caf\xe9 cr\xe8me"), "text files must be UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := document.Sniff(tc.file, tc.declared, tc.data)
			if strings.Contains(tc.want, "/") && !strings.Contains(tc.want, " ") {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
				return
			}
			require.True(t, apperr.Is(err, apperr.UnsupportedMedia), "%v", err)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, contentType string
		data              []byte
		pages             int
		err               string
	}{
		{"generated pdf", document.TypePDF, documenttest.PDF("1", "2", "3", "4", "5", "6", "7"), 7, ""},
		{"chromium pdf", document.TypePDF, chromiumPDF(t), 3, ""},
		{"not a pdf", document.TypePDF, []byte("%PDF-1.4\nnothing else"), 0, "not a readable PDF"},
		{"truncated pdf", document.TypePDF, documenttest.PDF("1", "2")[:200], 0, "not a readable PDF"},
		{"png", document.TypePNG, encodeImage(t, "png", 3, 2), 1, ""},
		{"webp", document.TypeWebP, webp1x1, 1, ""},
		{"png that is not one", document.TypePNG, []byte("\x89PNG\r\n\x1a\nbroken"), 0, "not a readable image"},
		{"image too large", document.TypePNG, pngClaiming(20_000, 5_001), 0, "at most 100 million pixels"},
		{"text", document.TypeText, []byte("a\nb\nc"), 1, ""},
		{"csv", document.TypeCSV, []byte("a,b\n1,2"), 1, ""},
		{"spreadsheet: one page per sheet", document.TypeXLSX, spreadsheet(t, "Orders", "Lines", "Notes"), 3, ""},
		{"broken spreadsheet", document.TypeXLSX, zipOf(t, "xl/workbook.xml"), 0, "not a readable spreadsheet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pages, err := document.Pages(tc.data, tc.contentType)
			if tc.err != "" {
				require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.pages, pages)
		})
	}
}

func TestCheckRanges(t *testing.T) {
	t.Parallel()
	tooMany := make([]document.Range, document.MaxRanges+1)
	for i := range tooMany {
		tooMany[i] = document.Range{From: 1, To: 1}
	}
	cases := []struct {
		name   string
		ranges []document.Range
		err    string
	}{
		{"one page", []document.Range{{From: 3, To: 3}}, ""},
		{"whole document", []document.Range{{From: 1, To: 10}}, ""},
		{"overlapping ranges", []document.Range{{From: 1, To: 4}, {From: 1, To: 1}, {From: 4, To: 10}}, ""},
		{"none", nil, "ranges must hold at least one"},
		{"too many", tooMany, "ranges holds 51 ranges; at most 50"},
		{"from zero", []document.Range{{From: 0, To: 2}}, "ranges[0].from must be a page number from 1, got 0"},
		{"negative", []document.Range{{From: -3, To: 2}}, "ranges[0].from must be a page number from 1"},
		{"backwards", []document.Range{{From: 1, To: 2}, {From: 5, To: 4}}, "ranges[1] is empty: to (4) is before from (5)"},
		{"past the end", []document.Range{{From: 9, To: 11}}, "ranges[0].to is 11, but the document has 10 pages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := document.CheckRanges(tc.ranges, 10)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestSplitProducesTheRightPages(t *testing.T) {
	t.Parallel()
	var pages []string
	for i := 1; i <= 12; i++ {
		pages = append(pages, fmt.Sprintf("This is page %d of the batch", i))
	}
	src := documenttest.PDF(pages...)
	ranges := []document.Range{{From: 1, To: 3}, {From: 4, To: 4}, {From: 5, To: 12}, {From: 2, To: 3}}
	var parts [][]byte
	err := document.Split(context.Background(), src, ranges, func(i int, r document.Range, pdf []byte) error {
		require.Equal(t, ranges[i], r)
		parts = append(parts, bytes.Clone(pdf))
		return nil
	})
	require.NoError(t, err)
	require.Len(t, parts, len(ranges))
	for i, r := range ranges {
		n, err := document.PDFPages(parts[i])
		require.NoError(t, err)
		require.Equal(t, r.Pages(), n, "part %d (%s)", i, r)
		// Each page of the part is the page of the source it should be.
		for p := 1; p <= n; p++ {
			text, err := document.PageText(context.Background(), parts[i], document.TypePDF, p)
			require.NoError(t, err)
			require.Equal(t, pages[r.From+p-2], text.Text, "part %d page %d", i, p)
		}
	}

	// The real-world document splits too.
	var last []byte
	require.NoError(t, document.Split(context.Background(), chromiumPDF(t), []document.Range{{From: 2, To: 3}}, func(_ int, _ document.Range, pdf []byte) error {
		last = bytes.Clone(pdf)
		return nil
	}))
	n, err := document.PDFPages(last)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	text, err := document.PageText(context.Background(), last, document.TypePDF, 2)
	require.NoError(t, err)
	require.Contains(t, text.Text, "Goods remain our property")
}

func TestSplitRefusals(t *testing.T) {
	t.Parallel()
	src := documenttest.PDF("a", "b", "c")
	never := func(int, document.Range, []byte) error { panic("no part expected") }

	err := document.Split(context.Background(), src, []document.Range{{From: 2, To: 4}}, never)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, "ranges[0].to is 4, but the document has 3 pages")

	err = document.Split(context.Background(), []byte("%PDF-1.7 not really"), []document.Range{{From: 1, To: 1}}, never)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = document.Split(ctx, src, []document.Range{{From: 1, To: 1}}, never)
	require.True(t, apperr.Is(err, apperr.Timeout), "a cancelled split stops: %v", err)

	// An error of the receiver stops the split after that part.
	calls := 0
	stop := apperr.Conflictf("storage full")
	err = document.Split(context.Background(), src, []document.Range{{From: 1, To: 1}, {From: 2, To: 2}}, func(int, document.Range, []byte) error {
		calls++
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, calls)
}

func TestPageText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	chromium := chromiumPDF(t)
	generated := documenttest.PDF("Total (net): 1,200.00\nDue: 30 days\n\nMüller & Söhne", "second")
	long := strings.Repeat("ä", document.MaxPageTextBytes) // two bytes each
	cases := []struct {
		name, contentType string
		data              []byte
		page              int
		want              string
		truncated         bool
		err               string
	}{
		{"chromium page 1: words, lines and paragraphs", document.TypePDF, chromium, 1,
			"Invoice 2024-117\nVendor: Müller & Söhne GmbH. Total due: 1,234.50 EUR.\n\nPayment is due within 30 days. Thank you for your order!", false, ""},
		{"chromium page 3", document.TypePDF, chromium, 3,
			"Terms\nGoods remain our property until paid in full. Questions? Write to billing@example.com.", false, ""},
		{"generated page 1", document.TypePDF, generated, 1, "Total (net): 1,200.00\nDue: 30 days\n\nMüller & Söhne", false, ""},
		{"generated page 2", document.TypePDF, generated, 2, "second", false, ""},
		{"page 0", document.TypePDF, generated, 0, "", false, "page 0 is out of range: the document has 2 pages"},
		{"page past the end", document.TypePDF, chromium, 4, "", false, "page 4 is out of range: the document has 3 pages"},
		{"not a pdf", document.TypePDF, []byte("%PDF-1.4 garbage"), 1, "", false, "not a readable PDF"},
		{"text file", document.TypeText, []byte("\ufeffHello\nWorld"), 1, "Hello\nWorld", false, ""},
		{"text file page 2", document.TypeCSV, []byte("a,b"), 2, "", false, "page 2 is out of range: the document has 1 pages"},
		{"long text is cut on a rune", document.TypeText, []byte(long), 1, long[:document.MaxPageTextBytes], true, ""},
		{"image", document.TypePNG, encodeImage(t, "png", 2, 2), 1, "", false, ""},
		{"sheet as csv", document.TypeXLSX, spreadsheet(t, "Orders", "Lines"), 2, "sku,qty\nLines-1,4\n", false, ""},
		{"sheet out of range", document.TypeXLSX, spreadsheet(t, "Orders"), 2, "", false, "page 2 is out of range: the document has 1 pages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text, err := document.PageText(ctx, tc.data, tc.contentType, tc.page)
			if tc.err != "" {
				require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, text.Text)
			require.Equal(t, tc.truncated, text.Truncated)
		})
	}
}

// cancelAfter is a context that reports itself cancelled after its Err has
// been asked n times: it stops a page's reading part way through.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func TestPageTextStopsWithItsContext(t *testing.T) {
	t.Parallel()
	lines := make([]string, 3000) // a page of 6000 operators
	for i := range lines {
		lines[i] = "x"
	}
	data := documenttest.PDF(strings.Join(lines, "\n"))
	text, err := document.PageText(context.Background(), data, document.TypePDF, 1)
	require.NoError(t, err)
	require.Len(t, text.Text, 2*len(lines)-1)

	_, err = document.PageText(&cancelAfter{Context: context.Background(), n: 1}, data, document.TypePDF, 1)
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
	require.ErrorContains(t, err, "reading the text of page 1 was stopped")
}
