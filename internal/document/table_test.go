package document_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
)

// TestTable: a sheet's page text (and a CSV file's) reads back as the
// viewer's rows of cells, under the sheet's name; a sheet bomb is still
// refused by the page's budget before any table is made.
func TestTable(t *testing.T) {
	t.Parallel()
	xlsx := spreadsheet(t, "Orders", "Lines")
	cases := []struct {
		name, contentType string
		data              []byte
		page              int
		sheet             string
		rows              [][]string
		err               apperr.Code
	}{
		{"first sheet", document.TypeXLSX, xlsx, 1, "Orders", [][]string{{"sku", "qty"}, {"Orders-1", "4"}}, ""},
		{"second sheet", document.TypeXLSX, xlsx, 2, "Lines", [][]string{{"sku", "qty"}, {"Lines-1", "4"}}, ""},
		{"csv with a quoted cell and ragged rows", document.TypeCSV,
			[]byte("name,note\n\"Doe, J\",\"<img src=x onerror=alert(1)>\"\nlonely\n"), 1, "",
			[][]string{{"name", "note"}, {"Doe, J", "<img src=x onerror=alert(1)>"}, {"lonely"}}, ""},
		{"csv with a bare quote", document.TypeCSV, []byte("5\" pipe,3\n"), 1, "", [][]string{{"5\" pipe", "3"}}, ""},
		{"sheet bomb of empty cells", document.TypeXLSX, documenttest.XLSXBomb(0, document.MaxSheetCells+1), 1, "", nil, apperr.OverBudget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text, err := document.PageText(context.Background(), tc.data, tc.contentType, tc.page)
			if err == nil {
				var rows [][]string
				rows, err = document.Table(text)
				require.Equal(t, tc.rows, rows)
			}
			if tc.err != "" {
				require.True(t, apperr.Is(err, tc.err), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.sheet, text.Sheet)
		})
	}
}

// TestTableOfACutText: the last row of a truncated page text may be cut
// (even inside a quoted cell), so it is not shown as a row.
func TestTableOfACutText(t *testing.T) {
	t.Parallel()
	rows, err := document.Table(document.Text{Text: "a,b\nc,d\ne,f", Truncated: true})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a", "b"}, {"c", "d"}}, rows)
	rows, err = document.Table(document.Text{Text: "a,b\nc,\"d", Truncated: true})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a", "b"}}, rows)

}
