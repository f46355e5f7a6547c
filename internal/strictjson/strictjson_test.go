package strictjson_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
)

type sample struct {
	Name    string          `json:"name"`
	Count   int             `json:"count,omitempty"`
	On      bool            `json:"on,omitempty"`
	Tags    []string        `json:"tags,omitempty"`
	Extra   json.RawMessage `json:"extra,omitempty"`
	Pointer *string         `json:"pointer,omitempty"`
}

func TestDecodeRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, msg string }{
		{``, "the request body is empty"},
		{`   `, "the request body is empty"},
		{`{"name":"a","nmae":"b"}`, `unknown field "nmae"`},
		{`{"name":1}`, "name must be a string, not number"},
		{`{"count":"3"}`, "count must be a number, not string"},
		{`{"on":"yes"}`, "on must be true or false, not string"},
		{`{"tags":"x"}`, "tags must be an array, not string"},
		{`[1,2]`, "expected an object, not array"},
		{`{"name":"a"} {"name":"b"}`, "unexpected data after the value"},
		{`{"name":`, "invalid JSON: unexpected end of input"},
		{`{name:1}`, "invalid JSON at byte 2: invalid character"},
	} {
		var v sample
		err := strictjson.Decode([]byte(tc.body), &v)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", tc.body, err)
		_, _, msg := apperr.Public(err)
		require.Contains(t, msg, tc.msg, tc.body)
	}
	var v sample
	require.NoError(t, strictjson.Decode([]byte(` {"name":"ok","count":2} `), &v))
	require.Equal(t, sample{Name: "ok", Count: 2}, v)
}

func TestMerge(t *testing.T) {
	t.Parallel()
	p := "p"
	cur := sample{Name: "a", Count: 2, Tags: []string{"x"}, Extra: json.RawMessage(`{"deep":{"k":1}}`), Pointer: &p}
	out, err := strictjson.Merge(cur, []byte(`{"count":5,"tags":null,"extra":{"other":true},"pointer":null}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"a","count":5,"extra":{"other":true}}`, string(out), "named fields replaced whole, null cleared")

	_, err = strictjson.Merge(cur, []byte(`[1]`))
	require.True(t, apperr.Is(err, apperr.Invalid))
	_, err = strictjson.Merge(cur, []byte(`null`))
	require.True(t, apperr.Is(err, apperr.Invalid))
}
