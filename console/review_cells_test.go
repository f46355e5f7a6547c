package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFirstCells: a sheet's table in the viewer holds at most
// maxViewerCells cells; the rows past them are cut and the cut is said.
func TestFirstCells(t *testing.T) {
	t.Parallel()
	rows := [][]string{{"a", "b"}, {}, {"c", "d", "e"}}
	for _, tc := range []struct {
		limit int
		want  int
		cut   bool
	}{{6, 3, false}, {5, 2, true}, {3, 2, true}, {2, 1, true}, {1, 0, true}} {
		got, cut := firstCells(rows, tc.limit)
		require.Len(t, got, tc.want, "limit %d", tc.limit)
		require.Equal(t, tc.cut, cut, "limit %d", tc.limit)
	}
}
