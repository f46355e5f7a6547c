package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

func TestWithRowsAffectedAddsTheCountToTheRecord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"verb":"write","row":{"id":2}}`: `{"verb":"write","row":{"id":2},"rows_affected":3}`,
		`{}`:                              `{"rows_affected":3}`,
		` { "verb" : "write" } `:          `{ "verb" : "write" ,"rows_affected":3}`,
	} {
		got := withRowsAffected(models.JSON(in), 3)
		require.JSONEq(t, want, string(got), in)
	}
}
