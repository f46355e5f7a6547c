package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

// An intent's record keeps the row as sent, and says what encoding the
// decoded row would say, whether or not the row could be kept as sent.
func TestIntentRecordIsTheDecodedRowsRecord(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"op":"set_n","payload":{"row":{"id":12345678901234567890,"n":"a \"b\" \u00e9","x":[1,{"y":null}]}}}`,
		` { "payload" : { "row" : { "id" : 1.50 } } , "op" : "set_n" } `,
		`{"op":"set_n","payload":{"Row":{"id":1}}}`, // a key the decoder folds: encoded from the decoded row
		`{"op":"set_n","payload":{"row":{}}}`,
	} {
		r, p, ok, err := parse[writePayload]([]byte(body))
		require.NoError(t, err, body)
		require.True(t, ok, body)
		got := intentRecord("write", "op", r.Op, "row", []byte(body), p.Row)
		want := models.MustJSON(map[string]any{"op": r.Op, "row": p.Row, "verb": "write"})
		require.JSONEq(t, string(want), string(got), body)
		require.True(t, json.Valid(got), body)
	}
}
