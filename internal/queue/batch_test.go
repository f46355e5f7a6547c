package queue

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
)

// TestUniqueIDsCapsWhileDeduplicating: a selection is its distinct non-empty
// ids in first order; repeats never count towards MaxBatch, and the
// (MaxBatch+1)th distinct id is refused wherever it comes, however many ids
// follow it.
func TestUniqueIDsCapsWhileDeduplicating(t *testing.T) {
	t.Parallel()
	ids := func(from, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%d", from+i)
		}
		return out
	}
	atCap := ids(0, MaxBatch)
	repeated := slices.Concat(slices.Repeat([][]string{atCap}, 80)...) // 8000 ids, MaxBatch distinct
	for _, tc := range []struct {
		name string
		in   []string
		want []string // nil: refused with msg
		msg  string
	}{
		{"one", []string{"a"}, []string{"a"}, ""},
		{"repeats and blanks dropped, first order kept", []string{"b", "", "a", "b", "a", "c"}, []string{"b", "a", "c"}, ""},
		{"exactly MaxBatch", atCap, atCap, ""},
		{"MaxBatch distinct repeated to 8000", repeated, atCap, ""},
		{"MaxBatch distinct, then a repeat of each", slices.Concat(atCap, atCap), atCap, ""},
		{"one distinct past the cap", ids(0, MaxBatch+1), nil, "a bulk action takes at most 100 tasks"},
		{"the extra distinct id after 8000 repeats", append(slices.Clone(repeated), "late"), nil, "a bulk action takes at most 100 tasks"},
		{"8000 distinct", ids(0, 8000), nil, "a bulk action takes at most 100 tasks"},
		{"nothing", nil, nil, "select at least one task"},
		{"only blanks", []string{"", ""}, nil, "select at least one task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := uniqueIDs(tc.in)
			if tc.want == nil {
				require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
				require.ErrorContains(t, err, tc.msg)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// BenchmarkUniqueIDsOfAHugeForm is the cost of refusing a form of 8000
// distinct ids: it stops at the (MaxBatch+1)th, whatever follows.
func BenchmarkUniqueIDsOfAHugeForm(b *testing.B) {
	in := make([]string, 8000)
	for i := range in {
		in[i] = fmt.Sprintf("t%d", i)
	}
	for b.Loop() {
		if _, err := uniqueIDs(in); err == nil {
			b.Fatal("8000 distinct ids were accepted")
		}
	}
}
