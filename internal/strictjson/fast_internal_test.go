package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// target is shaped like the bodies the decoder meets: a runtime envelope
// with a typed payload, untyped values, raw fields, pointers and numbers.
type target struct {
	Op      string          `json:"op"`
	AwaitID string          `json:"await_id,omitempty"`
	Payload *targetPayload  `json:"payload"`
	Raw     json.RawMessage `json:"raw,omitempty"`
}

type targetPayload struct {
	Filters map[string]any    `json:"filters"`
	Limit   int               `json:"limit"`
	Small   int8              `json:"small"`
	Ratio   float64           `json:"ratio"`
	Count   *uint             `json:"count"`
	On      bool              `json:"on"`
	Tags    []string          `json:"tags"`
	Rows    []map[string]any  `json:"rows"`
	Names   map[string]string `json:"names"`
	Any     any               `json:"any"`
	Num     json.Number       `json:"num"`
	Pair    [2]int            `json:"pair"`
	Inner   struct {
		Name string `json:"name"`
	} `json:"inner"`
}

// reference decodes as encoding/json alone does.
func reference(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) != 0 {
		return errNotReference
	}
	return nil
}

var errNotReference = bytes.ErrTooLarge

// agree fails when plain accepts invalid JSON, or the fast decoder accepts
// a plain body the reference refuses or decodes it to another value.
func agree(t *testing.T, data []byte) {
	if !plain(data) {
		return
	}
	require.True(t, json.Valid(data), "plain accepted invalid JSON %q", data)
	for _, fresh := range []func() any{
		func() any { return new(target) },
		func() any { return new(map[string]any) },
		func() any { return new(any) },
		func() any { return new([]int) },
	} {
		fast, ref := fresh(), fresh()
		if fastDecode(data, fast) != nil {
			continue // the reference decides it
		}
		require.NoError(t, reference(data, ref), "the fast decoder accepted %q into %T, encoding/json refuses it", data, fast)
		require.Equal(t, ref, fast, "decoded differently: %q", data)
	}
}

var tricky = []string{
	`{"op":"a","payload":{"limit":50,"filters":{"vendor":"ACME","n":1.50}}}`,
	`{"op":"a","payload":{"limit":1e2}}`,
	`{"op":"a","payload":{"limit":1.5}}`,
	`{"op":"a","payload":{"limit":999999999999999}}`,
	`{"op":"a","payload":{"limit":9223372036854775808}}`,
	`{"op":"a","payload":{"limit":-9223372036854775809}}`,
	`{"op":"a","payload":{"small":127}}`,
	`{"op":"a","payload":{"small":128}}`,
	`{"op":"a","payload":{"small":-129}}`,
	`{"op":"a","payload":{"count":-1}}`,
	`{"op":"a","payload":{"count":0.5}}`,
	`{"op":"a","payload":{"ratio":1e400}}`,
	`{"op":"a","payload":{"num":"12"}}`,
	`{"op":"a","payload":{"num":"x"}}`,
	`{"op":"a","payload":{"num":true}}`,
	`{"op":"a","payload":{"any":123456789012345678901234567890}}`,
	`{"op":"a","payload":{"limit":"5"}}`,
	`{"op":"a","payload":{"on":"true"}}`,
	`{"op":"a","payload":{"on":1}}`,
	`{"op":"a","payload":{"tags":[1]}}`,
	`{"op":"a","payload":{"tags":null}}`,
	`{"op":"a","payload":{"tags":{}}}`,
	`{"op":"a","payload":{"pair":[1,2,3]}}`,
	`{"op":"a","payload":{"pair":[1]}}`,
	`{"op":"a","payload":{"inner":{"name":"x","other":1}}}`,
	`{"op":"a","payload":{"inner":{"NAME":"x"}}}`,
	`{"op":"a","payload":{"inner":[]}}`,
	`{"op":"a","payload":null}`,
	`{"op":"a","payload":{"limit":null,"on":null}}`,
	`{"op":"a","payload":{"bogus":1}}`,
	`{"op":"a","payload":{"rows":[{"a":1,"b":[1,{"c":null}]}]}}`,
	`{"op":"a","payload":{"names":{"a":1}}}`,
	`{"op":"a","payload":{"LIMIT":5}}`,
	`{"OP":"a","Payload":{"Limit":5}}`,
	`{"op":"a","unknown":{"x":1}}`,
	`{"op":"\u00e9\ud83d\ude00","payload":{}}`,
	`{"op":"é😀 \/ \" \\ \n","payload":{}}`,
	`{"op":"\ud800","payload":{}}`,
	`{"op":"\u0000"}`,
	"{\"op\":\"a\x01b\"}",
	"{\"op\":\"a\xffb\"}",
	`{"op":"a","raw":{"x":[1,2,{"y":"z"}]}}`,
	`{"op":"a","raw":nul}`,
	`{"op":"a","raw":nulls}`,
	`{"op":"a","raw":truex}`,
	`{"op":"a",}`,
	`{"op":"a" "b":1}`,
	`{"op":"a"} x`,
	`{"op":"a"}{}`,
	`{"op":"a"}   `,
	` {"op":"a"}`,
	"\ufeff{\"op\":\"a\"}",
	`{"op":'a'}`,
	`{"op":"a" /* c */}`,
	`{"op":"a","payload":{"limit":01}}`,
	`{"op":"a","payload":{"limit":-0}}`,
	`{"op":"a","payload":{"limit":-}}`,
	`{"op":"a","payload":{"ratio":.5}}`,
	`{"op":"a","payload":{"ratio":5.}}`,
	`{"op":"a","payload":{"ratio":NaN}}`,
	`{"op":"a","payload":{"any":[1,"2",true,null,{"k":1.0}]}}`,
	`{"op":"a","payload":{"filters":{"a":{"b":{"c":{"d":[[[]]]}}}}}}`,
	`[1,2,3]`,
	`[1,2,]`,
	`[]`,
	`"op"`,
	`null`,
	`{"op":["a"]}`,
	`{"op":{"a":1}}`,
	`{"op":"a","await_id":1}`,
	`{"a":1,"a":2}`,
	`{`,
	`{"op"`,
	`{"op":`,
	`{"op":"a`,
	`{"op":"a\`,
}

func TestFastDecoderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, body := range tricky {
		agree(t, []byte(body))
		peekAgrees(t, []byte(body))
	}
}

func TestPlainSubset(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"op":"read_rows","payload":{"filters":{"vendor":"ACME"},"limit":50}}`: true,
		` [1, -2.5, "x", true, false, null, {}] `:                               true,
		`{"a":"\"\\\/\b\f\n\r\t é"}`:                                            true,
		`{"a":1e3}`:                                                             false, // exponents: the reference
		`{"a":1234567890123456}`:                                                false, // 16 digits
		`{"a":"\u0041"}`:                                                        false, // \u escapes
		"{\"a\":\"\x7f\xc3\"}":                                                  false, // invalid UTF-8
		`{"a":1}x`:                                                              false,
		`{"a":01}`:                                                              false,
		`{"a":[1,]}`:                                                            false,
		`{"a" 1}`:                                                               false,
		``:                                                                      false,
	} {
		require.Equal(t, want, plain([]byte(body)), body)
	}
}

// FuzzFastDecoder holds the fast path to encoding/json on any input: plain
// accepts only valid JSON, and the fast decoder may refuse more, never
// accept more or decode differently.
func FuzzFastDecoder(f *testing.F) {
	for _, body := range tricky {
		f.Add([]byte(body))
	}
	f.Add([]byte(`{"op":"d","payload":{"filters":{"task_id":"a","task_id":"b"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data)
		peekAgrees(t, data)
	})
}

// peekAgrees fails when PeekString panics or finds an op that decoding the
// body (when it holds no repeated key) would not.
func peekAgrees(t *testing.T, data []byte) {
	op, ok := PeekString(data, "op")
	if json.Valid(data) {
		Lookup(data, "payload", "row") // must not panic
	}
	if !ok || duplicateKey(data) != "" {
		return
	}
	var v struct{ Op string }
	require.NoError(t, json.Unmarshal(data, &v), "peeked %q in %q", op, data)
	require.Equal(t, v.Op, op, "peeked in %q", data)
}
