package agenttool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
)

// appTarget is an app target on apiComponent.
func appTarget(path string) agenttool.Target {
	return agenttool.Target{Type: agenttool.TargetApp, Component: apiComponent.ID, Path: path, Method: "POST"}
}

// TestReferencesAreSinglePass: a value that itself holds a reference is
// sent as text, in every position, never expanded a second time.
func TestReferencesAreSinglePass(t *testing.T) {
	t.Parallel()
	tg := appTarget("/tools/${input.a}")
	tg.Query = map[string]string{"q": "${input.a}"}
	tg.Headers = map[string]string{"X-A": "${input.a}"}
	tg.Body = json.RawMessage(`{"whole":"${input.a}","inside":"a=${input.a}","all":"${input}"}`)
	input := json.RawMessage(`{"a":"${env.API_KEY}"}`)

	out, err := agenttool.BuildRequest(tg, input, &apiComponent)
	require.NoError(t, err)
	require.Equal(t, "https://api.example.test/v1/tools/%24%7Benv.API_KEY%7D?q=%24%7Benv.API_KEY%7D", out.URL)
	require.Equal(t, "${env.API_KEY}", out.Header.Get("X-A"))
	require.JSONEq(t, `{"whole":"${env.API_KEY}","inside":"a=${env.API_KEY}","all":{"a":"${env.API_KEY}"}}`, string(out.Body))
	require.NotContains(t, out.URL+string(out.Body)+out.Header.Get("X-A"), "k-123", "the env value never appears")
}

// TestReferencesResolve is the resolution table: where a reference sits,
// what it becomes.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	input := json.RawMessage(`{"name":"Ann Lee","n":1.50,"ok":true,"none":null,"tags":["x","y"],
		"items":[{"id":7},{"id":8,"name":"b/c"}],"obj":{"z":1,"a":"<&>"},"empty":""}`)
	tests := []struct {
		name   string
		target agenttool.Target
		url    string
		header string
		body   string
	}{
		{name: "whole input as the body sends the JSON value",
			target: withBody(appTarget("/t"), `"${input}"`),
			url:    "https://api.example.test/v1/t",
			body:   `{"name":"Ann Lee","n":1.50,"ok":true,"none":null,"tags":["x","y"],"items":[{"id":7},{"id":8,"name":"b/c"}],"obj":{"a":"<&>","z":1},"empty":""}`},
		{name: "a whole-string reference keeps the JSON type",
			target: withBody(appTarget("/t"), `{"n":"${input.n}","ok":"${input.ok}","none":"${input.none}","tags":"${input.tags}","key":"${env.API_KEY}"}`),
			url:    "https://api.example.test/v1/t",
			body:   `{"n":1.50,"ok":true,"none":null,"tags":["x","y"],"key":"k-123"}`},
		{name: "inside a longer string non-strings render as compact JSON",
			target: withBody(appTarget("/t"), `{"s":"n=${input.n} ok=${input.ok} none=${input.none} tags=${input.tags} obj=${input.obj}"}`),
			url:    "https://api.example.test/v1/t",
			body:   `{"s":"n=1.50 ok=true none=null tags=[\"x\",\"y\"] obj={\"a\":\"<&>\",\"z\":1}"}`},
		{name: "arrays by index",
			target: withBody(appTarget("/items/${input.items.1.id}"), `{"second":"${input.items.1.name}","first":"${input.tags.0}"}`),
			url:    "https://api.example.test/v1/items/8",
			body:   `{"second":"b/c","first":"x"}`},
		{name: "a path value is one escaped segment",
			target: appTarget("/people/${input.name}/${input.items.1.name}"),
			url:    "https://api.example.test/v1/people/Ann%20Lee/b%2Fc"},
		{name: "$${ is a literal ${ everywhere",
			target: withHeader(withBody(appTarget("/t"), `{"lit":"$${input.name}","mixed":"$${input} is ${input.name}"}`), "X-Lit", "$${env.API_KEY}"),
			url:    "https://api.example.test/v1/t",
			header: "${env.API_KEY}",
			body:   `{"lit":"${input.name}","mixed":"${input} is Ann Lee"}`},
		{name: "a lone $ is literal",
			target: withHeader(appTarget("/t"), "X-Lit", "costs $5 {x} $"),
			url:    "https://api.example.test/v1/t",
			header: "costs $5 {x} $"},
		{name: "query map values are encoded as a whole, sorted",
			target: withQuery(appTarget("/t"), map[string]string{"b": "${input.obj.a}", "a": "x&y=${input.name}"}),
			url:    "https://api.example.test/v1/t?a=x%26y%3DAnn+Lee&b=%3C%26%3E"},
		{name: "url target: references in path and query, origin literal",
			target: agenttool.Target{Type: agenttool.TargetURL, Method: "GET", URL: "https://search.example.test/s/${input.name}?q=${input.obj.a}&n=${input.n}"},
			url:    "https://search.example.test/s/Ann%20Lee?q=%3C%26%3E&n=1.50"},
		{name: "env in a header",
			target: withHeader(appTarget("/t"), "X-Api-Key", "Key ${env.API_KEY}/${env.REGION}"),
			url:    "https://api.example.test/v1/t",
			header: "Key k-123/eu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := agenttool.BuildRequest(tt.target, input, &apiComponent)
			require.NoError(t, err)
			require.Equal(t, tt.url, out.URL)
			if tt.header != "" {
				for name := range tt.target.Headers {
					require.Equal(t, tt.header, out.Header.Get(name))
				}
			}
			if tt.body == "" {
				require.Nil(t, out.Body, "no implicit body")
				require.Empty(t, out.Header.Get("Content-Type"))
				return
			}
			require.JSONEq(t, tt.body, string(out.Body))
			require.Equal(t, "application/json", out.Header.Get("Content-Type"))
		})
	}
}

// TestNumbersKeepTheirDigits: a number is sent with the digits it came with.
func TestNumbersKeepTheirDigits(t *testing.T) {
	t.Parallel()
	out, err := agenttool.BuildRequest(withBody(appTarget("/t"), `"${input}"`), json.RawMessage(`{"big":12345678901234567890,"f":1.50}`), &apiComponent)
	require.NoError(t, err)
	require.Equal(t, `{"big":12345678901234567890,"f":1.50}`, string(out.Body))
}

// TestMissingReferencesFail: a reference the input or env lacks fails the
// call (400) and nothing is built; nothing is ever substituted empty.
func TestMissingReferencesFail(t *testing.T) {
	t.Parallel()
	input := json.RawMessage(`{"a":{"b":1},"list":[1,2],"s":"x","empty":""}`)
	tests := []struct {
		name   string
		target agenttool.Target
		code   apperr.Code
	}{
		{"absent key in the body", withBody(appTarget("/t"), `{"v":"${input.nope}"}`), apperr.Invalid},
		{"absent nested key", withBody(appTarget("/t"), `"${input.a.c}"`), apperr.Invalid},
		{"key below a scalar", withBody(appTarget("/t"), `"${input.s.x}"`), apperr.Invalid},
		{"index past the end", withBody(appTarget("/t"), `"${input.list.2}"`), apperr.Invalid},
		{"leading zero is not an index", withBody(appTarget("/t"), `"${input.list.01}"`), apperr.Invalid},
		{"key on an array", withBody(appTarget("/t"), `"${input.list.x}"`), apperr.Invalid},
		{"absent in a header", withHeader(appTarget("/t"), "X-A", "v ${input.nope}"), apperr.Invalid},
		{"absent in the query", withQuery(appTarget("/t"), map[string]string{"q": "${input.nope}"}), apperr.Invalid},
		{"absent in the path", appTarget("/t/${input.nope}"), apperr.Invalid},
		{"empty in the path", appTarget("/t/${input.empty}"), apperr.Invalid},
		{"env the component does not declare", withHeader(appTarget("/t"), "X-A", "${env.NOPE}"), apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := agenttool.BuildRequest(tt.target, input, &apiComponent)
			requireCode(t, err, tt.code)
			require.Empty(t, out.URL)
		})
	}
}

// TestPathValuesStayInTheirSegment: a value that would leave its segment is
// refused (403), like the gateway's http_call paths.
func TestPathValuesStayInTheirSegment(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"..", ".", "%2e%2e", "%252e%252e", "../admin", "a\\..\\b"} {
		_, err := agenttool.BuildRequest(appTarget("/files/${input.v}/x"), mustJSON(t, map[string]string{"v": v}), &apiComponent)
		requireCode(t, err, apperr.Forbidden)
	}
	out, err := agenttool.BuildRequest(appTarget("/files/${input.v}"), mustJSON(t, map[string]string{"v": "a/b?c#d"}), &apiComponent)
	require.NoError(t, err, "a slash is escaped, so the value stays one segment")
	require.Equal(t, "https://api.example.test/v1/files/a%2Fb%3Fc%23d", out.URL)
}

// TestHeaderValuesCannotSplit: a resolved header value with CR or LF is
// refused.
func TestHeaderValuesCannotSplit(t *testing.T) {
	t.Parallel()
	_, err := agenttool.BuildRequest(withHeader(appTarget("/t"), "X-A", "${input.v}"), mustJSON(t, map[string]string{"v": "a\r\nX-Evil: 1"}), &apiComponent)
	requireCode(t, err, apperr.Invalid)
}

// TestReferencesAtSave: the declaration's templates are checked when it is
// saved: unknown, malformed and undeclared references are refused; an env
// reference is only for an app target; $${…} is not a reference.
func TestReferencesAtSave(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		target string
		ok     bool
	}{
		{"input, path and env", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t/${input.url}","method":"POST","headers":{"X-Key":"${env.API_KEY}"},"body":{"u":"${input.url}","all":"${input}"}}`, true},
		{"escaped reference to nothing", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","body":"$${secret.X} $${input.zzz}"}`, true},
		{"unknown namespace", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","body":"${secret.X}"}`, false},
		{"unknown inside a key's value", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","body":{"a":["${inputs}"]}}`, false},
		{"unclosed", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","headers":{"X-A":"${input.a"}}`, false},
		{"empty path segment", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","query":{"q":"${input..a}"}}`, false},
		{"env not declared by the component", `{"type":"app","component":"` + apiComponent.ID + `","path":"/t","method":"POST","headers":{"X-A":"${env.OTHER}"}}`, false},
		{"env on a url target", `{"type":"url","url":"https://x.example.test/a","method":"POST","headers":{"X-A":"${env.API_KEY}"}}`, false},
		{"reference in the url's host", `{"type":"url","url":"https://${input.host}.example.test/a","method":"GET"}`, false},
		{"reference in the url's port", `{"type":"url","url":"https://x.example.test:${input.port}/a","method":"GET"}`, false},
		{"reference in the url's path and query", `{"type":"url","url":"https://x.example.test/a/${input.url}?q=${input.url}","method":"GET"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := agenttool.ParseDeclaration(context.Background(), declaration(tt.target), checkOptions())
			if tt.ok {
				require.NoError(t, err)
				return
			}
			requireCode(t, err, apperr.Invalid)
		})
	}
}

func withBody(t agenttool.Target, body string) agenttool.Target {
	t.Body = json.RawMessage(body)
	return t
}

func withHeader(t agenttool.Target, name, value string) agenttool.Target {
	t.Headers = map[string]string{name: value}
	return t
}

func withQuery(t agenttool.Target, q map[string]string) agenttool.Target {
	t.Query = q
	return t
}

// FuzzEscapedTextStaysLiteral: any text with its "${" written as "$${"
// resolves to itself, with no reference read, whatever it holds; and no
// template, however malformed, makes resolution panic.
func FuzzEscapedTextStaysLiteral(f *testing.F) {
	for _, seed := range []string{"${input}", "$${input}", "$$${x}", "${", "}", "$", "a ${env.X} b", "${input.a.0}", "$$$$"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		escaped := strings.ReplaceAll(s, "${", "$${")
		body := mustJSON(t, escaped)
		out, err := agenttool.BuildRequest(withBody(appTarget("/t"), string(body)), json.RawMessage(`{}`), &apiComponent)
		require.NoError(t, err)
		var got string
		require.NoError(t, json.Unmarshal(out.Body, &got))
		require.Equal(t, s, got)

		// Unescaped, the text either resolves or is refused; it never panics.
		_, _ = agenttool.BuildRequest(withBody(appTarget("/t"), string(mustJSON(t, s))), json.RawMessage(`{"a":1}`), &apiComponent)
	})
}
