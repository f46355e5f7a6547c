package field_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/field"
)

// One name rule for every admin-entered name: trimmed, at most max
// characters (runes, not bytes), no control characters; OptionalName also
// takes a blank one.
func TestNameRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want, err string
		optional       bool
	}{
		{raw: "  Invoices  ", want: "Invoices"},
		{raw: strings.Repeat("é", 10), want: strings.Repeat("é", 10)}, // 20 bytes, 10 characters
		{raw: strings.Repeat("é", 11), err: "name is longer than 10 characters"},
		{raw: "a\tb", err: "name may not contain control characters"},
		{raw: "   ", err: "name is required"},
		{raw: "   ", optional: true, want: ""},
		{raw: strings.Repeat("x", 11), optional: true, err: "name is longer than 10 characters"},
	} {
		check := field.Name
		if tc.optional {
			check = field.OptionalName
		}
		got, err := check(tc.raw, "name", 10)
		if tc.err != "" {
			require.EqualError(t, err, "invalid: "+tc.err, "%q", tc.raw)
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
			continue
		}
		require.NoError(t, err, "%q", tc.raw)
		require.Equal(t, tc.want, got)
	}
}
