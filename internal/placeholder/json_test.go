package placeholder_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/placeholder"
)

// payload decodes a payload the way the runtime does (numbers as json.Number).
func payload(t *testing.T, raw string) map[string]any {
	t.Helper()
	var p map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&p))
	return p
}

func TestJSONFillsByType(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tmpl, payload string
		prune               bool
		want                string
		code                apperr.Code
	}{
		{"whole placeholders keep their JSON type",
			`{"name":"{{name}}","n":"{{n}}","ok":"{{ok}}","tags":"{{tags}}","who":"{{who}}","none":"{{none}}"}`,
			`{"name":"Ann","n":12345678901234567890,"ok":true,"tags":["a","b"],"who":{"id":1},"none":null}`, false,
			`{"name":"Ann","n":12345678901234567890,"ok":true,"tags":["a","b"],"who":{"id":1},"none":null}`, ""},
		{"keys keep the template's order",
			`{"z":1,"a":"{{a}}","m":[1,"{{a}}"]}`, `{"a":"x"}`, false,
			`{"z":1,"a":"x","m":[1,"x"]}`, ""},
		{"a value cannot add a field",
			`{"name":"{{name}}","role":"viewer"}`, `{"name":"x\",\"role\":\"admin"}`, false,
			`{"name":"x\",\"role\":\"admin","role":"viewer"}`, ""},
		{"embedded placeholders take the value's text",
			`{"greeting":"Hello {{name}} #{{n}}","html":"<b>{{name}}</b>"}`, `{"name":"\"Ann\" & co","n":7}`, false,
			`{"greeting":"Hello \"Ann\" & co #7","html":"<b>\"Ann\" & co</b>"}`, ""},
		{"session keys come from the session",
			`{"task":"{{task_id}}","ws":"ws-{{workspace_id}}"}`, `{"task_id":"spoofed","workspace_id":"spoofed"}`, false,
			`{"task":"t-1","ws":"ws-w-1"}`, ""},
		{"a placeholder in a key",
			`{"{{field}}":"{{value}}"}`, `{"field":"email","value":"a@b.c"}`, false,
			`{"email":"a@b.c"}`, ""},
		{"a filled key that collides",
			`{"{{field}}":1,"email":2}`, `{"field":"email"}`, false, "", apperr.Invalid},
		{"absent without prune", `{"a":"{{a}}"}`, `{}`, false, "", apperr.Invalid},
		{"absent in a longer string, even with prune", `{"a":"x{{a}}"}`, `{}`, true, "", apperr.Invalid},
		{"an object inside a string", `{"a":"x{{a}}"}`, `{"a":{"b":1}}`, false, "", apperr.Invalid},
		{"empty and null are sent without prune",
			`{"a":"{{a}}","b":"{{b}}"}`, `{"a":"","b":null}`, false, `{"a":"","b":null}`, ""},
		{"prune drops what resolved to nothing, at any depth",
			`{"name":"{{name}}","email":"{{email}}","phone":"{{phone}}","nick":"{{nick}}","keep":"x{{empty}}",
			  "filter":{"city":"{{city}}","zip":"{{zip}}","deep":{"q":"{{q}}"}},
			  "items":[{"sku":"{{sku}}","qty":"{{qty}}"},"{{email}}","{{empty}}","{{nothing}}"],
			  "count":0,"flag":false,"blank":""}`,
			`{"name":"Ann","phone":null,"nick":"","empty":"","city":"Paris","zip":"","q":null,"sku":"","qty":2,"nothing":null}`, true,
			`{"name":"Ann","keep":"x","filter":{"city":"Paris","deep":{}},"items":[{"qty":2},null,"",null],"count":0,"flag":false,"blank":""}`, ""},
		{"prune keeps false and zero",
			`{"a":"{{a}}","b":"{{b}}"}`, `{"a":false,"b":0}`, true, `{"a":false,"b":0}`, ""},
		{"a top-level array", `["{{a}}",{"b":"{{b}}"}]`, `{"a":1}`, true, `[1,{}]`, ""},
		{"a top-level placeholder", `"{{a}}"`, `{"a":{"x":[1,2]}}`, false, `{"x":[1,2]}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := placeholder.JSON(json.RawMessage(tc.tmpl), src(payload(t, tc.payload)), tc.prune)
			if tc.code != "" {
				require.Equal(t, tc.code, apperr.CodeOf(err), "%v (got %s)", err, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.True(t, json.Valid(got))
		})
	}
}

func TestJSONRefusesABrokenTemplate(t *testing.T) {
	t.Parallel()
	for _, tmpl := range []string{`{"a":`, `{"a":1} {}`, `{"a":"{{ a }}"}`, `{"a":"x{{1}}"}`} {
		_, err := placeholder.JSON(json.RawMessage(tmpl), src(map[string]any{"a": "x"}), false)
		require.Equal(t, apperr.Internal, apperr.CodeOf(err), "%s: %v", tmpl, err)
	}
}
