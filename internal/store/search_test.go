package store_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestContainsMatchesItsTextOnly(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		for _, tc := range []struct {
			name, text, value string
			match             bool
		}{
			{"substring", "port", "Quarterly Report", true},
			{"case", "REPORT", "quarterly report", true},
			{"percent is literal", "50%", "50% off", true},
			{"percent matches no run", "5%f", "50% off", false},
			{"underscore is literal", "a_b", "a_b", true},
			{"underscore matches no char", "a_b", "axb", false},
			{"backslash is literal", `a\b`, `a\b`, true},
			{"backslash escapes nothing", `a\%`, `a%`, false},
			{"trimmed", "  report ", "report", true},
			{"absent", "invoice", "report", false},
		} {
			var n int64
			err := st.DB.Raw("SELECT COUNT(*) FROM (SELECT ? AS v) s WHERE LOWER(v) LIKE ?"+store.LikeEscape, tc.value, store.Contains(tc.text)).Scan(&n).Error
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.match, n == 1, tc.name)
		}
	})
}

func TestContainsIsBounded(t *testing.T) {
	t.Parallel()
	p := store.Contains(strings.Repeat("é", store.MaxSearchRunes+50))
	require.Equal(t, store.MaxSearchRunes+2, len([]rune(p)))
}
