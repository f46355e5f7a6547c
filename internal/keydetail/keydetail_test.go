package keydetail_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/keydetail"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	many := make([]keydetail.Definition, keydetail.MaxDefinitions+1)
	for i := range many {
		many[i].Key = "k" + strings.Repeat("x", i%60) + string(rune('a'+i%26))
	}
	cases := []struct {
		name string
		defs []keydetail.Definition
		want string // "" accepts
	}{
		{"none", nil, ""},
		{"typed", []keydetail.Definition{{Key: "amount", Type: "number"}, {Key: "_due", Type: "date"}}, ""},
		{"too many", many, "at most 50"},
		{"bad key", []keydetail.Definition{{Key: "1st"}}, "must start with a letter"},
		{"twice", []keydetail.Definition{{Key: "a"}, {Key: "a"}}, "defined twice"},
		{"bad type", []keydetail.Definition{{Key: "a", Type: "money"}}, "must be one of"},
		{"long description", []keydetail.Definition{{Key: "a", Description: strings.Repeat("d", keydetail.MaxDescriptionLength+1)}}, "too long"},
	}
	for _, tc := range cases {
		err := keydetail.Check(tc.defs)
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}
