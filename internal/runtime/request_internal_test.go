package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
)

func TestParseDecodesOnceAndFallsBackToTheTwoStepDecode(t *testing.T) {
	t.Parallel()
	r, p, decoded, err := parse[readPayload]([]byte(`{"op":"list","payload":{"columns":["a"],"filters":{"id":7}}}`))
	require.NoError(t, err)
	require.True(t, decoded)
	require.Equal(t, "list", r.Op)
	require.Equal(t, []string{"a"}, p.Columns)
	require.Equal(t, json.Number("7"), p.Filters["id"], "numbers stay json.Number")

	// A payload of another shape (a lookup's values) falls back with its raw payload kept.
	r, _, decoded, err = parse[readPayload]([]byte(`{"op":"lookup","payload":{"name":"x"}}`))
	require.NoError(t, err)
	require.False(t, decoded)
	require.JSONEq(t, `{"name":"x"}`, string(r.Payload))
	var q readPayload
	_, _, msg := apperr.Public(decodePayload(r.Payload, &q))
	require.Equal(t, `bad payload: unknown field "name"`, msg)

	for body, msg := range map[string]string{
		`{"op":"x","await_id":"nope"}`: `await_id must be a UUID, got "nope"`,
		`{"payload":{}}`:               "op is required",
		`{"op":"x","payload":[1]}`:     "payload must be a JSON object",
		`{"op":"x",`:                   "bad request body: invalid JSON: unexpected end of input",
	} {
		_, _, _, err := parse[readPayload]([]byte(body))
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), body)
		_, _, pub := apperr.Public(err)
		require.Equal(t, msg, pub, body)
	}
}
