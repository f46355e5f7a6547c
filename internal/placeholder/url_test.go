package placeholder_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/placeholder"
)

var session = map[string]string{"task_id": "t-1", "agent_id": "a-1", "step_id": "s-1", "workspace_id": "w-1"}

func src(payload map[string]any) placeholder.Source {
	return placeholder.Source{Session: session, Payload: payload}
}

// The escaping table of issue 9: each value either lands where the template
// put it, escaped, or is refused with the code the seed gives.
func TestURLEscapesByPosition(t *testing.T) {
	t.Parallel()
	const (
		pathT  = "https://api.example.com/v1/accounts/{{v}}/notes?limit=5"
		queryT = "https://api.example.com/v1/search?q={{v}}&limit=5"
		hostT  = "https://{{v}}.example.com:8443/v1/ping"
	)
	cases := []struct {
		name, tmpl string
		value      any
		want       string      // the filled URL, when it is not refused
		code       apperr.Code // the refusal
	}{
		{"plain path value", pathT, "ACME-42", "https://api.example.com/v1/accounts/ACME-42/notes?limit=5", ""},
		{"dot dot in the path", pathT, "..", "", apperr.Forbidden},
		{"dot in the path", pathT, ".", "", apperr.Forbidden},
		{"encoded dot dot in the path", pathT, "%2e%2e", "", apperr.Forbidden},
		{"upper-case encoded dot dot", pathT, "%2E%2E", "", apperr.Forbidden},
		{"double-encoded dot dot", pathT, "%252e%252e", "", apperr.Forbidden},
		{"traversal inside a value", pathT, "x/../admin", "", apperr.Forbidden},
		{"backslash traversal", pathT, `..\admin`, "", apperr.Forbidden},
		{"slash is one segment", pathT, "a/b", "https://api.example.com/v1/accounts/a%2Fb/notes?limit=5", ""},
		{"query in the path", pathT, "a?b=c", "https://api.example.com/v1/accounts/a%3Fb%3Dc/notes?limit=5", ""},
		{"fragment in the path", pathT, "#", "https://api.example.com/v1/accounts/%23/notes?limit=5", ""},
		{"semicolon in the path", pathT, "..;", "https://api.example.com/v1/accounts/..%3B/notes?limit=5", ""},
		{"percent in the path", pathT, "100%", "https://api.example.com/v1/accounts/100%25/notes?limit=5", ""},
		{"unicode in the path", pathT, "é", "https://api.example.com/v1/accounts/%C3%A9/notes?limit=5", ""},
		{"CRLF in the path", pathT, "a\r\nHost: evil", "", apperr.Forbidden},
		{"encoded NUL in the path", pathT, "%00", "", apperr.Forbidden},
		{"raw NUL in the path", pathT, "a\x00", "", apperr.Forbidden},
		{"IPv6 literal in the path", pathT, "[::1]", "https://api.example.com/v1/accounts/%5B%3A%3A1%5D/notes?limit=5", ""},
		{"empty in the path", pathT, "", "", apperr.Invalid},
		{"null in the path", pathT, nil, "", apperr.Invalid},
		{"number in the path", pathT, json.Number("42"), "https://api.example.com/v1/accounts/42/notes?limit=5", ""},
		{"object in the path", pathT, map[string]any{"a": 1}, "", apperr.Invalid},

		{"plain query value", queryT, "acme corp", "https://api.example.com/v1/search?q=acme+corp&limit=5", ""},
		{"parameters in the query", queryT, "a?b=c&limit=1000", "https://api.example.com/v1/search?q=a%3Fb%3Dc%26limit%3D1000&limit=5", ""},
		{"fragment in the query", queryT, "#", "https://api.example.com/v1/search?q=%23&limit=5", ""},
		{"dot dot in the query", queryT, "..", "https://api.example.com/v1/search?q=..&limit=5", ""},
		{"CRLF in the query", queryT, "a\r\nb", "https://api.example.com/v1/search?q=a%0D%0Ab&limit=5", ""},
		{"NUL in the query", queryT, "%00", "https://api.example.com/v1/search?q=%2500&limit=5", ""},
		{"empty in the query", queryT, "", "https://api.example.com/v1/search?q=&limit=5", ""},

		{"a tenant label", hostT, "acme", "https://acme.example.com:8443/v1/ping", ""},
		{"digits and inner hyphen", hostT, "a-1", "https://a-1.example.com:8443/v1/ping", ""},
		{"63-character label", hostT, strings.Repeat("a", 63), "https://" + strings.Repeat("a", 63) + ".example.com:8443/v1/ping", ""},
		{"64-character label", hostT, strings.Repeat("a", 64), "", apperr.Forbidden},
		{"full-width dot", hostT, "a\uff0eevil", "", apperr.Forbidden},
		{"a dot", hostT, "a.evil", "", apperr.Forbidden},
		{"leading hyphen", hostT, "-a", "", apperr.Forbidden},
		{"trailing hyphen", hostT, "a-", "", apperr.Forbidden},
		{"upper case", hostT, "ACME", "", apperr.Forbidden},
		{"IDNA A-label", hostT, "xn--pple-43d", "", apperr.Forbidden},
		{"other reserved label", hostT, "ab--c", "", apperr.Forbidden},
		{"hyphens elsewhere", hostT, "a--b", "https://a--b.example.com:8443/v1/ping", ""},
		{"IPv6 literal", hostT, "[::1]", "", apperr.Forbidden},
		{"userinfo", hostT, "evil.com@x", "", apperr.Forbidden},
		{"port", hostT, "x:1", "", apperr.Forbidden},
		{"slash", hostT, "evil.com/", "", apperr.Forbidden},
		{"question mark", hostT, "x?", "", apperr.Forbidden},
		{"hash", hostT, "x#", "", apperr.Forbidden},
		{"percent-encoded", hostT, "a%2eb", "", apperr.Forbidden},
		{"CRLF", hostT, "a\r\n", "", apperr.Forbidden},
		{"NUL", hostT, "%00", "", apperr.Forbidden},
		{"empty", hostT, "", "", apperr.Forbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := placeholder.URL(tc.tmpl, src(map[string]any{"v": tc.value}))
			if tc.code != "" {
				require.Error(t, err, "filled as %q", got)
				require.Equal(t, tc.code, apperr.CodeOf(err), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestURLAbsentKeyIs400(t *testing.T) {
	t.Parallel()
	for _, tmpl := range []string{
		"https://api.example.com/a/{{v}}",
		"https://api.example.com/a?q={{v}}",
		"https://{{v}}.example.com/",
	} {
		_, err := placeholder.URL(tmpl, src(nil))
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%s: %v", tmpl, err)
		_, public, msg := apperr.Public(err)
		require.Equal(t, 400, public)
		require.Equal(t, "{{v}} is not in the payload", msg)
	}
}

func TestSessionKeysComeFromTheSessionOnly(t *testing.T) {
	t.Parallel()
	payload := map[string]any{"task_id": "spoofed", "workspace_id": "spoofed"}
	got, err := placeholder.URL("https://api.example.com/tasks/{{task_id}}?ws={{workspace_id}}", src(payload))
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/tasks/t-1?ws=w-1", got)

	// Without a session, a payload value still never stands in for one.
	_, err = placeholder.URL("https://api.example.com/tasks/{{task_id}}", placeholder.Source{Payload: payload})
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
	require.ErrorContains(t, err, "{{task_id}} has no session value")
}

func TestURLTemplateShapesARefusedAtRunTime(t *testing.T) {
	t.Parallel()
	// Bindings saved through the API never hold these; the gateway refuses
	// them anyway rather than trust the stored document.
	values := src(map[string]any{"v": "acme", "w": "b"})
	for _, tmpl := range []string{
		"https://{{v}}.com/",               // chooses the domain
		"https://{{v}}/",                   // the whole host
		"https://x{{v}}.example.com/",      // part of a label
		"https://{{v}}.{{w}}.example.com/", // two labels
		"https://api.example.com:{{v}}/",   // the port
		"https://{{v}}@api.example.com/",   // userinfo
		"https://[{{v}}]/",                 // an IP literal
	} {
		_, err := placeholder.URL(tmpl, values)
		require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%s: %v", tmpl, err)
	}
	_, err := placeholder.URL("{{v}}://api.example.com/", values)
	require.Equal(t, apperr.Internal, apperr.CodeOf(err))
	_, err = placeholder.URL("https://api.example.com/{{ v }}", values)
	require.Equal(t, apperr.Internal, apperr.CodeOf(err))
}

func TestSeveralValuesInOneSegment(t *testing.T) {
	t.Parallel()
	// Two dots that are harmless alone make ".." together: the filled
	// segment is what is checked.
	_, err := placeholder.URL("https://api.example.com/{{a}}{{b}}/x", src(map[string]any{"a": ".", "b": "."}))
	require.Equal(t, apperr.Forbidden, apperr.CodeOf(err))
	require.ErrorContains(t, err, "{{a}}, {{b}} would leave its path segment")
	got, err := placeholder.URL("https://api.example.com/files/{{a}}.{{b}}", src(map[string]any{"a": "report", "b": "pdf"}))
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/files/report.pdf", got)
}

func TestHostLabel(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"a": true, "0": true, "a-b": true, strings.Repeat("z", 63): true,
		"": false, "-": false, "a_b": false, "ä": false, "a\uff0eb": false, strings.Repeat("z", 64): false,
		"xn--abc": false, "XN--abc": false,
	} {
		require.Equal(t, want, placeholder.HostLabel(s), "%q", s)
	}
}
