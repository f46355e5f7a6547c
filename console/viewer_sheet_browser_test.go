package console_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// TestViewerShowsSheetsAsPagedTables: a two-sheet XLSX task file shows as
// one table per sheet under the sheet's name, 100 rows at a time (the
// second page of a 250-row sheet starts at row 101); a cell holding HTML
// shows as text and never runs; find-in-document finds a row on a page not
// shown and pages there; a sheet bomb shows its budget's message, not an
// error page.
func TestViewerShowsSheetsAsPagedTables(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, selectionProbe, "document_selection")
	id := tool.task(t, "Sheet viewer", 10)

	x := excelize.NewFile()
	require.NoError(t, x.SetSheetName("Sheet1", "Orders"))
	for i := 1; i <= 250; i++ {
		require.NoError(t, x.SetSheetRow("Orders", fmt.Sprintf("A%d", i), &[]any{fmt.Sprintf("row-%d", i), i * 2}))
	}
	_, err := x.NewSheet("Notes")
	require.NoError(t, err)
	const hostile = `<img src=x onerror="window.pwned=1">`
	require.NoError(t, x.SetSheetRow("Notes", "A1", &[]any{"note", hostile}))
	book, err := x.WriteToBuffer()
	require.NoError(t, err)
	require.NoError(t, x.Close())
	_, err = s.P.Files.Upload(context.Background(), id, "orders.xlsx", "", book)
	require.NoError(t, err)
	_, err = s.P.Files.Upload(context.Background(), id, "bomb.xlsx", "", bytes.NewReader(documenttest.XLSXBomb(0, document.MaxSheetCells+1)))
	require.NoError(t, err)

	require.Equal(t, s.URL+"/review/tasks/"+id, reviewNextSignedIn(t, ctx, s, f.ReviewerEmail))
	doc := `document.querySelector('.document[data-file-name="orders.xlsx"]')`
	require.Equal(t, []string{"Orders", "Notes"}, browser.Eval[[]string](t, ctx,
		`[...`+doc+`.querySelectorAll(".sheet-name")].map((h) => h.textContent)`))
	orders := doc + `.querySelector('.page[data-page="1"]')`
	visible := `[...` + orders + `.querySelectorAll("tr")].filter((r) => !r.hidden && r.offsetParent !== null).map((r) => r.cells[0].textContent)`
	require.Equal(t, "rows 1–100 of 250", browser.Eval[string](t, ctx, orders+`.querySelector(".sheet-status").textContent`))
	rows := browser.Eval[[]string](t, ctx, visible)
	require.Len(t, rows, 100)
	require.Equal(t, "row-1", rows[0])

	require.NoError(t, chromedp.Do(ctx, browser.Press(`.document[data-file-name="orders.xlsx"] .page[data-page="1"] .sheet-next`)))
	require.Equal(t, "rows 101–200 of 250", browser.Eval[string](t, ctx, orders+`.querySelector(".sheet-status").textContent`))
	rows = browser.Eval[[]string](t, ctx, visible)
	require.Len(t, rows, 100)
	require.Equal(t, "row-101", rows[0])
	require.NoError(t, chromedp.Do(ctx, browser.Press(`.document[data-file-name="orders.xlsx"] .page[data-page="1"] .sheet-next`)))
	require.Equal(t, "rows 201–250 of 250", browser.Eval[string](t, ctx, orders+`.querySelector(".sheet-status").textContent`))
	require.True(t, browser.Eval[bool](t, ctx, orders+`.querySelector(".sheet-next").disabled`))
	require.NoError(t, chromedp.Do(ctx, browser.Press(`.document[data-file-name="orders.xlsx"] .page[data-page="1"] .sheet-prev`)))
	require.Equal(t, "row-101", browser.Eval[[]string](t, ctx, visible)[0])

	// The hostile cell is text: no image element, no handler run.
	notes := doc + `.querySelector('.page[data-page="2"]')`
	require.Equal(t, hostile, browser.Eval[string](t, ctx, notes+`.querySelector("td:nth-child(2)").textContent`))
	require.Equal(t, 0, browser.Eval[int](t, ctx, `document.querySelectorAll(".sheet img").length`))
	require.False(t, browser.Eval[bool](t, ctx, `window.pwned === 1`))

	// Find pages the sheet to the row that holds the text.
	require.Equal(t, "1 of 1 page", browser.Eval[string](t, ctx, `(() => {
		const input = document.getElementById("viewer-find");
		input.value = "row-42";
		input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
		return document.getElementById("find-status").textContent;
	})()`))
	require.Equal(t, "rows 1–100 of 250", browser.Eval[string](t, ctx, orders+`.querySelector(".sheet-status").textContent`))
	require.Equal(t, "row-42", browser.Eval[string](t, ctx, orders+`.querySelector("tr.found").cells[0].textContent`))

	// The bomb's sheet says why it is not shown: the cells' budget, or on
	// a loaded machine (the race detector) the time's, whichever is first.
	require.Regexp(t, `the sheet has more than 1000000 cells|sheet "Sheet1" took more than 10s`, browser.Eval[string](t, ctx,
		`document.querySelector('.document[data-file-name="bomb.xlsx"] .refused').textContent`))
}
