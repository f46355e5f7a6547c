package document_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
)

// pdfBomb is the attack's PDF: one 64 MiB FlateDecode stream of white
// space named 200 times by its page's contents (about 67 KB), built once.
var pdfBomb = sync.OnceValue(func() []byte { return documenttest.PDFBomb(64<<20, 200) })

// TestPDFBombPageTextIsRefusedFast: the page's text stops at the page's
// budget of decoded bytes (counting each reference of the stream) with a
// 422 naming the limit, in well under a second; before, the page decoded
// 12.5 GiB of white space (~31 s of CPU) since white space yields no
// operator at which the context was checked.
func TestPDFBombPageTextIsRefusedFast(t *testing.T) {
	t.Parallel()
	data := pdfBomb()
	require.Less(t, len(data), 100<<10)
	start := time.Now()
	_, err := document.PageText(context.Background(), data, document.TypePDF, 1)
	took := time.Since(start)
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
	require.Equal(t, 422, apperr.Status(apperr.OverBudget))
	// The page's 16 MiB refuses it (~0.1 s alone); on a machine too loaded
	// to decode 16 MiB in 10 s the wall-time budget does, the same 422.
	if !strings.Contains(err.Error(), "16 MiB of decoded streams") {
		require.ErrorContains(t, err, "10s")
	}
	t.Logf("refused in %s: %v", took, err)
}

// TestPDFBombStopsWhenTheCallerHangsUp: a caller's context that ends
// stops the decoding at the next read, although the streams hold no
// operator.
func TestPDFBombStopsWhenTheCallerHangsUp(t *testing.T) {
	t.Parallel()
	data := pdfBomb()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := document.PageText(&cancelAfter{Context: ctx, n: 3}, data, document.TypePDF, 1)
	cancel()
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
	require.ErrorContains(t, err, "was stopped")
}

// TestPDFBombPagesAndSplit: counting the bomb's pages (at upload) and
// splitting it are refused fast (422) and write nothing; before, pdfcpu
// decoded each of the 200 references whole in memory and never returned.
func TestPDFBombPagesAndSplit(t *testing.T) {
	t.Parallel()
	data := pdfBomb()
	start := time.Now()
	n, err := document.Pages(data, document.TypePDF)
	t.Logf("pages: %d, %v in %s", n, err, time.Since(start))
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)

	start = time.Now()
	parts := 0
	err = document.Split(context.Background(), data, []document.Range{{From: 1, To: 1}}, func(int, document.Range, []byte) error {
		parts++
		return nil
	})
	t.Logf("split: %d parts, %v in %s", parts, err, time.Since(start))
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
	require.Zero(t, parts, "nothing half-written")
}

// TestXLSXBombIsStreamed: a 1.3 MB spreadsheet of four 58 MB inlineStr
// cells renders its first page of text (truncated) without holding a cell:
// the heap grows by a few MiB, not by the cells' 232 MB; before, excelize
// read the whole sheet (the api reached 511 MB a preview).
func TestXLSXBombIsStreamed(t *testing.T) {
	data := documenttest.XLSXBomb(58<<20, 4)
	require.Less(t, len(data), 2<<20)
	n, err := document.Pages(data, document.TypeXLSX)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	text, err := document.PageText(context.Background(), data, document.TypeXLSX, 1)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		// Under -race on a loaded machine the work budget (MaxWork) may
		// end the read before the text cap does: still a bounded refusal.
		require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
		require.Contains(t, err.Error(), "took more than 10s")
	} else {
		require.True(t, text.Truncated)
		require.LessOrEqual(t, len(text.Text), document.MaxPageTextBytes)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MiB allocated in %s", allocated>>20, took)
	require.Less(t, allocated, uint64(16<<20))
	// No wall-clock bound here (~0.1 s alone, 7 s seen under -race on a
	// loaded machine): the work budget (MaxWork) is what bounds time, with
	// an over-budget error the other tests assert; this one is about memory.
}

// TestXLSXCellBudget: a sheet of more than MaxSheetCells empty cells (no
// text, so the text cap never stops it) is refused (422) naming the limit:
// the cells, or MaxWork on a machine too loaded to read them in time; the
// refusal is the sheet's own, not the whole file's.
func TestXLSXCellBudget(t *testing.T) {
	data := documenttest.XLSXBomb(0, document.MaxSheetCells+1)
	_, err := document.PageText(context.Background(), data, document.TypeXLSX, 1)
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
	require.Regexp(t, "more than 1000000 cells|took more than 10s", err.Error())
	require.False(t, document.WholeFile(err), "a sheet's cells are that sheet's own refusal")
}

// TestTextPreviewCopiesOnlyItsPage: a text file's page is its first
// MaxPageTextBytes; only those are copied. Before, the whole file was
// made a string first (a 48 MiB CSV allocated 48 MiB a preview).
func TestTextPreviewCopiesOnlyItsPage(t *testing.T) {
	data := bytes.Repeat([]byte("id,vendor,country\n"), 48<<20/18)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	text, err := document.PageText(context.Background(), data, document.TypeCSV, 1)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.True(t, text.Truncated)
	require.Len(t, text.Text, document.MaxPageTextBytes)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d KiB allocated", allocated>>10)
	require.Less(t, allocated, uint64(4<<20))
}

// TestMalformedPDFsAreRefusedByTheMeteredPass: a PDF the metered reader
// cannot read is a 400 naming what is wrong, before pdfcpu sees it; no
// panic. Before, pdfcpu repaired and counted the truncated one and the one
// whose startxref points nowhere (2 pages each).
func TestMalformedPDFsAreRefusedByTheMeteredPass(t *testing.T) {
	t.Parallel()
	good := documenttest.PDF("hello", "two")
	sx := bytes.LastIndex(good, []byte("startxref\n"))
	for name, data := range map[string][]byte{
		"truncated":             good[:len(good)-10],
		"garbage after header":  append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("garbage \x00\xff"), 100)...),
		"startxref to nowhere":  append(append([]byte{}, good[:sx]...), []byte("startxref\n99999\n%%EOF\n")...),
		"half of the file":      good[:len(good)/2],
		"self-nested page tree": bytes.Replace(good, []byte("/Kids [4 0 R 6 0 R]"), []byte("/Kids [2 0 R]"), 1),
	} {
		n, err := document.PDFPages(data)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %d pages, %v", name, n, err)
		require.ErrorContains(t, err, "the file is not a readable PDF (", name)
	}
	n, err := document.PDFPages(good)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestASharedStringsRefusalHoldsForEverySheet: a workbook whose
// shared-string table is past its budget is refused on every sheet (each
// reads the table first), and says so (document.WholeFile), so that a
// cache of refusals keeps it once for the file; a page out of range and a
// good page do not (a sheet's own refusal: TestXLSXCellBudget).
func TestASharedStringsRefusalHoldsForEverySheet(t *testing.T) {
	t.Parallel()
	// 130 strings of 128 KiB (each cut at MaxPageTextBytes): past the
	// table's 16 MiB of text.
	bomb := documenttest.XLSXSharedStringsBomb(3, 130, document.MaxPageTextBytes)
	require.Less(t, len(bomb), 1<<20)
	for page := 1; page <= 3; page++ {
		_, err := document.PageText(context.Background(), bomb, document.TypeXLSX, page)
		require.True(t, apperr.Is(err, apperr.OverBudget), "sheet %d: %v", page, err)
		require.Regexp(t, "shared strings hold more than 16 MiB|took more than 10s", err.Error())
		require.True(t, document.WholeFile(err), "sheet %d: %v", page, err)
	}
	small := documenttest.XLSXSharedStringsBomb(2, 3, 10)
	text, err := document.PageText(context.Background(), small, document.TypeXLSX, 2)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("A", 10), strings.TrimSpace(text.Text))
	_, err = document.PageText(context.Background(), small, document.TypeXLSX, 3)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.False(t, document.WholeFile(err), "a page out of range is that page's")

	for name, c := range map[string]struct {
		data []byte
		typ  string
	}{"not a zip": {[]byte("not a workbook"), document.TypeXLSX}, "not a PDF": {[]byte("%PDF-1.4 broken"), document.TypePDF}} {
		_, err := document.PageText(context.Background(), c.data, c.typ, 2)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", name, err)
		require.True(t, document.WholeFile(err), "%s: %v", name, err)
	}
}
