package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/gateway"
)

// How a rest read's reply maps to rows, and what it refuses.
func TestRESTRowsMapping(t *testing.T) {
	t.Parallel()
	text := func(s string) *string { return &s }
	note := gateway.ReplyTooLargeNote
	cols := []string{"id", "name"}
	cases := []struct {
		name    string
		resp    Response
		limit   int
		rows    [][]any
		message string
	}{
		{"objects by key, extra keys dropped, missing ones null", Response{Status: 200, Body: json.RawMessage(`[{"id":1,"name":"a","x":2},{"name":"b"}]`)}, 10,
			[][]any{{json.Number("1"), "a"}, {nil, "b"}}, ""},
		{"numbers keep their digits", Response{Status: 200, Body: json.RawMessage(`[{"id":12345678901234567890}]`)}, 10,
			[][]any{{json.Number("12345678901234567890"), nil}}, ""},
		{"at most limit rows", Response{Status: 200, Body: json.RawMessage(`[{"id":1},{"id":2},{"id":3}]`)}, 2,
			[][]any{{json.Number("1"), nil}, {json.Number("2"), nil}}, ""},
		{"an empty array", Response{Status: 201, Body: json.RawMessage(`[]`)}, 10, [][]any{}, ""},
		{"a non-2xx", Response{Status: 404, Body: json.RawMessage(`[]`)}, 10, nil, `rest read "op": the upstream answered 404`},
		{"an object", Response{Status: 200, Body: json.RawMessage(`{"rows":[]}`)}, 10, nil, `rest read "op": the upstream's reply is not a JSON array of objects`},
		{"an array of scalars", Response{Status: 200, Body: json.RawMessage(`[1,2]`)}, 10, nil, `rest read "op": the upstream's reply is not a JSON array of objects`},
		{"a null element", Response{Status: 200, Body: json.RawMessage(`[{"id":1},null]`)}, 10, nil, `rest read "op": the upstream's reply is not a JSON array of objects`},
		{"null", Response{Status: 200, Body: json.RawMessage(`null`)}, 10, nil, `rest read "op": the upstream's reply is not a JSON array of objects`},
		{"text", Response{Status: 200, Text: text("id,name")}, 10, nil, `rest read "op": the upstream's reply is not a JSON array of objects`},
		{"over 1 MiB", Response{Status: 200, Text: &note}, 10, nil, `rest read "op": the upstream's reply exceeded 1 MiB`},
	}
	for _, tc := range cases {
		rows, err := restRows("op", tc.resp, cols, tc.limit)
		if tc.message != "" {
			require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), tc.name)
			_, _, msg := apperr.Public(err)
			require.Equal(t, tc.message, msg, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.rows, rows, tc.name)
	}
}
