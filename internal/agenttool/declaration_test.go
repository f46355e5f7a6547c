package agenttool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
)

const okAppTarget = `{"type":"app","component":"11111111-1111-1111-1111-111111111111","path":"/tools/save-bookmark","method":"POST","body":"${input}"}`

// doc builds a declaration document from fields, each a raw JSON value.
func doc(fields map[string]string) []byte {
	base := map[string]string{
		"name":        `"save_bookmark"`,
		"displayName": `"Save bookmark"`,
		"description": `"Save a bookmark URL."`,
		"input":       `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`,
		"target":      okAppTarget,
	}
	for k, v := range fields {
		if v == "" {
			delete(base, k)
			continue
		}
		base[k] = v
	}
	var b strings.Builder
	b.WriteString("{")
	first := true
	for k, v := range base {
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(`"` + k + `":` + v)
	}
	b.WriteString("}")
	return []byte(b.String())
}

func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDeclarationRules is the save-time table: each rule at its limit and
// one past it.
func TestDeclarationRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fields map[string]string
		ok     bool
	}{
		{"valid", nil, true},
		{"name of 64", map[string]string{"name": quoted("a" + strings.Repeat("b", 63))}, true},
		{"name of 65", map[string]string{"name": quoted("a" + strings.Repeat("b", 64))}, false},
		{"name with dash and digits", map[string]string{"name": `"get-time_2"`}, true},
		{"name starting with _", map[string]string{"name": `"_x"`}, true},
		{"name starting with a digit", map[string]string{"name": `"2fa"`}, false},
		{"name with a dot", map[string]string{"name": `"a.b"`}, false},
		{"name with a space", map[string]string{"name": `"a b"`}, false},
		{"name empty", map[string]string{"name": `""`}, false},
		{"displayName of 80 runes", map[string]string{"displayName": quoted(strings.Repeat("é", 80))}, true},
		{"displayName of 81 runes", map[string]string{"displayName": quoted(strings.Repeat("é", 81))}, false},
		{"displayName blank", map[string]string{"displayName": `"  "`}, false},
		{"description of 1024", map[string]string{"description": quoted(strings.Repeat("d", 1024))}, true},
		{"description of 1025", map[string]string{"description": quoted(strings.Repeat("d", 1025))}, false},
		{"description missing", map[string]string{"description": ""}, false},
		{"input missing", map[string]string{"input": ""}, false},
		{"input not an object schema", map[string]string{"input": `{"type":"string"}`}, false},
		{"input without a root type", map[string]string{"input": `{"properties":{}}`}, false},
		{"input an invalid schema", map[string]string{"input": `{"type":"object","properties":{"a":{"type":"nonsense"}}}`}, false},
		{"input with minLength not a number", map[string]string{"input": `{"type":"object","properties":{"a":{"minLength":"3"}}}`}, false},
		{"input with a $ref outside", map[string]string{"input": `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`}, false},
		{"input with a $ref inside", map[string]string{"input": `{"type":"object","$defs":{"u":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/u"}}}`}, true},
		{"unknown field", map[string]string{"inputSchema": `{}`}, false},
		{"target missing", map[string]string{"target": ""}, false},
		{"target type unknown", map[string]string{"target": `{"type":"kazzle","name":"x"}`}, false},
		{"method lower case", map[string]string{"target": strings.Replace(okAppTarget, `"POST"`, `"post"`, 1)}, false},
		{"method HEAD", map[string]string{"target": strings.Replace(okAppTarget, `"POST"`, `"HEAD"`, 1)}, false},
		{"method missing (no default)", map[string]string{"target": strings.Replace(okAppTarget, `"method":"POST",`, ``, 1)}, false},
		{"app without component", map[string]string{"target": `{"type":"app","path":"/t","method":"POST"}`}, false},
		{"app with an unknown component", map[string]string{"target": `{"type":"app","component":"99999999-1111-1111-1111-111111111111","path":"/t","method":"POST"}`}, false},
		{"app with a url", map[string]string{"target": `{"type":"app","component":"11111111-1111-1111-1111-111111111111","path":"/t","url":"https://x.test/","method":"POST"}`}, false},
		{"app path without /", map[string]string{"target": `{"type":"app","component":"11111111-1111-1111-1111-111111111111","path":"t","method":"POST"}`}, false},
		{"app path with a query", map[string]string{"target": `{"type":"app","component":"11111111-1111-1111-1111-111111111111","path":"/t?a=1","method":"POST"}`}, false},
		{"app path with ..", map[string]string{"target": `{"type":"app","component":"11111111-1111-1111-1111-111111111111","path":"/a/../b","method":"POST"}`}, false},
		{"url target", map[string]string{"target": `{"type":"url","url":"https://hooks.example.test/in","method":"POST","headers":{"Authorization":"Bearer literal"},"body":{"text":"${input.url}"}}`}, true},
		{"url target http", map[string]string{"target": `{"type":"url","url":"http://hooks.example.test/in","method":"DELETE"}`}, true},
		{"url target ftp", map[string]string{"target": `{"type":"url","url":"ftp://hooks.example.test/in","method":"GET"}`}, false},
		{"url target relative", map[string]string{"target": `{"type":"url","url":"/in","method":"GET"}`}, false},
		{"url target with userinfo", map[string]string{"target": `{"type":"url","url":"https://u:p@hooks.example.test/in","method":"GET"}`}, false},
		{"url target with a fragment", map[string]string{"target": `{"type":"url","url":"https://hooks.example.test/in#x","method":"GET"}`}, false},
		{"url target with a component", map[string]string{"target": `{"type":"url","url":"https://hooks.example.test/in","component":"11111111-1111-1111-1111-111111111111","method":"GET"}`}, false},
		{"builtin", map[string]string{"target": `{"type":"builtin","name":"translate_text"}`}, true},
		{"builtin unknown", map[string]string{"target": `{"type":"builtin","name":"rm_rf"}`}, false},
		{"builtin with a method", map[string]string{"target": `{"type":"builtin","name":"translate_text","method":"POST"}`}, false},
		{"GET with a body", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","body":"${input}"}`}, false},
		{"Host header", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","headers":{"host":"evil"}}`}, false},
		{"invalid header name", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","headers":{"X A":"1"}}`}, false},
		{"header value with LF", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","headers":{"X-A":"1\nX-B: 2"}}`}, false},
		{"same header twice by case", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","headers":{"X-A":"1","x-a":"2"}}`}, false},
		{"33 query parameters", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","query":` + manyParams(33) + `}`}, false},
		{"32 query parameters", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","query":` + manyParams(32) + `}`}, true},
		{"unknown target field", map[string]string{"target": `{"type":"url","url":"https://x.example.test/","method":"GET","timeout":5}`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := agenttool.ParseDeclaration(context.Background(), doc(tt.fields), checkOptions())
			if tt.ok {
				require.NoError(t, err)
				require.NotEmpty(t, d.Name)
				return
			}
			requireCode(t, err, apperr.Invalid)
		})
	}
}

func manyParams(n int) string {
	m := map[string]string{}
	for i := range n {
		m["p"+strings.Repeat("x", i)] = "v"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestAuthorizationHeaderRefusedOnAppTargets: the platform owns an app
// target's Authorization, in any spelling of the name.
func TestAuthorizationHeaderRefusedOnAppTargets(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Authorization", "authorization", "AUTHORIZATION", "aUtHoRiZaTiOn"} {
		target := `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","headers":{` + quoted(name) + `:"Bearer ${env.API_KEY}"}}`
		_, err := agenttool.ParseDeclaration(context.Background(), declaration(target), checkOptions())
		requireCode(t, err, apperr.Invalid)
		require.Contains(t, err.Error(), "cannot set Authorization", name)
	}
}

// TestComponentOfAnotherWorkspace: an app target can name only a component
// of the declaring workspace.
func TestComponentOfAnotherWorkspace(t *testing.T) {
	t.Parallel()
	o := checkOptions()
	o.WorkspaceID = "00000000-0000-0000-0000-0000000000bb"
	_, err := agenttool.ParseDeclaration(context.Background(), declaration(okAppTarget), o)
	requireCode(t, err, apperr.Invalid)
	require.Contains(t, err.Error(), "not a component integration of this workspace")
}

// TestCheckInput validates a call's input against the declared schema.
func TestCheckInput(t *testing.T) {
	t.Parallel()
	d, err := agenttool.ParseDeclaration(context.Background(), declaration(okAppTarget), checkOptions())
	require.NoError(t, err)
	require.NoError(t, d.CheckInput(json.RawMessage(`{"url":"https://example.com"}`)))
	err = d.CheckInput(json.RawMessage(`{"url":5}`))
	requireCode(t, err, apperr.Invalid)
	require.Contains(t, err.Error(), "at '/url'")
	requireCode(t, d.CheckInput(json.RawMessage(`{}`)), apperr.Invalid)
	requireCode(t, d.CheckInput(json.RawMessage(`{"url":`)), apperr.Invalid)

	// A declaration read back from storage (no compiled schema) compiles on use.
	var stored agenttool.Declaration
	require.NoError(t, json.Unmarshal(declaration(okAppTarget), &stored))
	requireCode(t, stored.CheckInput(json.RawMessage(`{"url":5}`)), apperr.Invalid)
}
