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
		{`{"name":"a\u0000b"}`, `invalid JSON: a string holds \u0000 (NUL), which cannot be stored`},
		{`{"name":"a","extra":{"k":["\\\u0000"]}}`, `a string holds \u0000`}, // an escaped backslash, then NUL
		{`{"name":"a","extra":{"\u0000":1}}`, `a string holds \u0000`},       // a key
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
	require.NoError(t, strictjson.Decode([]byte(`{"name":"a\\u0000b \u0001"}`), &v), "a backslash before u0000 is no NUL")
	require.Equal(t, `a\u0000b `+"\x01", v.Name)
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

func TestDuplicateKeysAreRefusedAtAnyDepth(t *testing.T) {
	t.Parallel()
	type payload struct {
		Filters map[string]any `json:"filters"`
		Rows    []any          `json:"rows"`
	}
	type request struct {
		Op      string  `json:"op"`
		Payload payload `json:"payload"`
	}
	many := `{`
	for i := range 40 {
		many += `"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`
	}
	for _, tc := range []struct {
		name, body, dup string
	}{
		{"top level", `{"op":"a","op":"b"}`, "op"},
		{"nested object", `{"op":"a","payload":{"filters":{"vendor":"x","vendor":"y"}}}`, "payload.filters.vendor"},
		{"an object in an array", `{"op":"a","payload":{"rows":[{"id":1},{"id":2,"id":3}]}}`, "payload.rows[1].id"},
		{"escaped the same", `{"op":"a","\u006fp":"b"}`, "op"},
		{"a large object", `{"payload":{"filters":` + many + `"kaa":2}}}`, "payload.filters.kaa"},
		{"the same key in two objects is fine", `{"op":"a","payload":{"filters":{"op":1},"rows":[{"op":1},{"op":2}]}}`, ""},
		{"case differs", `{"op":"a","payload":{"filters":{"Vendor":1,"vendor":2}}}`, ""},
	} {
		var v request
		err := strictjson.Decode([]byte(tc.body), &v)
		if tc.dup == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", tc.name, err)
		_, _, msg := apperr.Public(err)
		require.Equal(t, `invalid JSON: duplicate key "`+tc.dup+`"`, msg, tc.name)
	}

	_, err := strictjson.Object(json.RawMessage(`{"a":1,"a":2}`), "config")
	require.True(t, apperr.Is(err, apperr.Invalid))
	require.ErrorContains(t, err, `config: invalid JSON: duplicate key "a"`)
	_, err = strictjson.Merge(sample{}, []byte(`{"name":"a","name":"b"}`))
	require.ErrorContains(t, err, `duplicate key "name"`)
}

// BenchmarkUnmarshalRuntimeBody is the hot path's decode: a /read body into
// the envelope runtime.parse decodes, its payload typed.
func BenchmarkUnmarshalRuntimeBody(b *testing.B) {
	body := []byte(`{"op":"get_item","payload":{"filters":{"id":1234,"status":"open"},"limit":50}}`)
	type payload struct {
		Columns []string       `json:"columns,omitempty"`
		Filters map[string]any `json:"filters,omitempty"`
		Cursor  string         `json:"cursor,omitempty"`
		Limit   int            `json:"limit,omitempty"`
	}
	type request struct {
		Op      string   `json:"op"`
		Payload *payload `json:"payload"`
		AwaitID string   `json:"await_id,omitempty"`
	}
	b.ReportAllocs()
	for b.Loop() {
		var r request
		if err := strictjson.Unmarshal(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// Try never accepts what Unmarshal refuses, and decodes what it accepts as
// Unmarshal does.
func TestTryAcceptsOnlyWhatUnmarshalAccepts(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		``, `{"name":"a","nmae":"b"}`, `{"name":1}`, `{"count":"3"}`, `[1,2]`,
		`{"name":"a"} {"name":"b"}`, `{"name":`, `{name:1}`, `{"name":"a","name":"b"}`,
		`{"tags":["x"],"extra":{"k":1,"k":2}}`, `{"name":"\u00e9"}`, `{"count":1e2}`,
		`{"name":"ok","count":2}`, ` {"tags":["a","b"],"extra":{"k":[1,{"z":null}]},"on":true} `,
		`{"name":"caf\u00e9","count":12345678901234567}`,
	} {
		var tried, ref sample
		ok := strictjson.Try([]byte(body), &tried)
		err := strictjson.Unmarshal([]byte(body), &ref)
		if ok {
			require.NoError(t, err, body)
			require.Equal(t, ref, tried, body)
		}
		if err != nil {
			require.False(t, ok, body)
		}
	}
}

func TestLookupFindsTheValueAsSentOrDeclines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		path []string
		want string // "" declines
	}{
		{`{"op":"w","payload":{"row":{"id":1,"n":"a b"}}}`, []string{"payload", "row"}, `{"id":1,"n":"a b"}`},
		{` { "payload" : { "x" : [1,{"row":2}], "row" : [ 1 , 2 ] } , "op":"w" } `, []string{"payload", "row"}, `[ 1 , 2 ]`},
		{`{"payload":{"row":"text, with } and \" inside"}}`, []string{"payload", "row"}, `"text, with } and \" inside"`},
		{`{"payload":{"row":12.5}}`, []string{"payload", "row"}, `12.5`},
		{`{"payload":{"rows":{}}}`, []string{"payload", "row"}, ""},
		{`{"payload":null}`, []string{"payload", "row"}, ""},
		{`{"payload":[{"row":1}]}`, []string{"payload", "row"}, ""},
		{`{"payload":{"Row":{"id":1}}}`, []string{"payload", "row"}, ""},                 // a decoder folds case
		{`{"payload":{"row":{"id":1},"ROW":{"id":2}}}`, []string{"payload", "row"}, ""},  // and would keep the last
		{`{"payload":{"\u0072ow":{"id":1}}}`, []string{"payload", "row"}, ""},            // an escaped key
		{`{"payload":{"x":{"a":1,"a":2},"row":[1]}}`, []string{"payload", "row"}, `[1]`}, // a repeat elsewhere is skipped whole
		{`{"payload":{"row":{"a":1,"a":2}},"op":"w"}`, []string{"payload", "row"}, `{"a":1,"a":2}`},
	} {
		raw, ok := strictjson.Lookup([]byte(tc.body), tc.path...)
		require.Equal(t, tc.want != "", ok, tc.body)
		require.Equal(t, tc.want, string(raw), tc.body)
	}
}

func TestPeekStringReadsAPlainBodyOnly(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"op":"lookup_item","payload":{"id":1}}`: "lookup_item",
		`{"payload":{"op":"inner"},"op":"outer"}`: "outer",
		`{"op":"a\"b"}`:      "", // an escape: decode first
		`{"op":1}`:           "", // not a string
		`{"Op":"x"}`:         "", // a decoder would fold it
		`{"op":"x"`:          "", // not JSON
		`{"op":"x"}}`:        "", // trailing data
		`["op","x"]`:         "", // not an object
		``:                   "",
		`{"op":"é"}`:         "é",
		"{\"op\":\"x\xff\"}": "", // invalid UTF-8
		// A repeated key inside a later member: the peek still finds op
		// (the strict decode then refuses the body).
		`{"op":"d","payload":{"filters":{"task_id":"a","task_id":"b"}}}`: "d",
		`{"op":"d","payload":{"limit":1,"limit":2},"x":[{"a":1,"a":2}]}`: "d",
		`{"payload":{"columns":["id"],"columns":["id"]},"op":"d"}`:       "d",
	} {
		got, ok := strictjson.PeekString([]byte(body), "op")
		require.Equal(t, want != "", ok, body)
		require.Equal(t, want, got, body)
	}
}
