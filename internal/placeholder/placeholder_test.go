package placeholder_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/placeholder"
)

func TestNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		names []string
		err   string
	}{
		{"no placeholders", nil, ""},
		{"{{a}}/{{b_2}}/{{_c}}{{a}}", []string{"a", "b_2", "_c", "a"}, ""},
		{"{ {a} } and {single}", nil, ""},
		{"x {{ name }}", nil, `malformed placeholder "{{ name }}": write {{name}} with letters, digits and _ (not starting with a digit, no spaces)`},
		{"{{1x}}", nil, `malformed placeholder "{{1x}}": write {{name}} with letters, digits and _ (not starting with a digit, no spaces)`},
		{"{{}}", nil, `malformed placeholder "{{}}": write {{name}} with letters, digits and _ (not starting with a digit, no spaces)`},
		{"{{a-b}}", nil, `malformed placeholder "{{a-b}}": write {{name}} with letters, digits and _ (not starting with a digit, no spaces)`},
		{"ok {{a}} then {{open", nil, `placeholder "{{open" is not closed with }}`},
		{"{{" + strings.Repeat("x", 50), nil, `placeholder "{{` + strings.Repeat("x", 38) + `…" is not closed with }}`},
	}
	for _, tc := range cases {
		names, err := placeholder.Names(tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.names, names, tc.in)
	}
}

func TestIsWhole(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{"{{a}}": "a", "{{task_id}}": "task_id", "{{a}}x": "", "x{{a}}": "", "{{a}}{{b}}": "", "{{1}}": "", "{{}}": ""} {
		name, ok := placeholder.IsWhole(s)
		require.Equal(t, want != "", ok, s)
		require.Equal(t, want, name, s)
	}
}

func TestFillSession(t *testing.T) {
	t.Parallel()
	got, err := placeholder.FillSession("task {{task_id}} of {{agent_id}}", session)
	require.NoError(t, err)
	require.Equal(t, "task t-1 of a-1", got)
	got, err = placeholder.FillSession("literal", nil)
	require.NoError(t, err)
	require.Equal(t, "literal", got)
	_, err = placeholder.FillSession("{{vendor}}", session)
	require.EqualError(t, err, "{{vendor}} is not a session value")
}

func TestHeaderRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value any
		want  string
		code  apperr.Code
	}{
		{"abc123", "Bearer abc123", ""},
		{"a\tb", "Bearer a\tb", ""},
		{json.Number("7"), "Bearer 7", ""},
		{"x\r\nX-Admin: 1", "", apperr.Invalid},
		{"x\nX-Admin: 1", "", apperr.Invalid},
		{"x\r", "", apperr.Invalid},
		{"x\x00", "", apperr.Invalid},
		{"x\x7f", "", apperr.Invalid},
		{[]any{"a"}, "", apperr.Invalid},
	}
	for _, tc := range cases {
		got, err := placeholder.Header("Bearer {{v}}", src(map[string]any{"v": tc.value}))
		if tc.code != "" {
			require.Equal(t, tc.code, apperr.CodeOf(err), "%q: %v", tc.value, err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	_, err := placeholder.Header("{{missing}}", src(nil))
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
}

func TestTextFillsUnescaped(t *testing.T) {
	t.Parallel()
	got, err := placeholder.Text("{{q}}*", src(map[string]any{"q": "a&b=c"}))
	require.NoError(t, err)
	require.Equal(t, "a&b=c*", got, "the caller encodes the whole query")
	got, err = placeholder.Text("{{q}}", src(map[string]any{"q": ""}))
	require.NoError(t, err)
	require.Equal(t, "", got)
	_, err = placeholder.Text("{{q}}", src(nil))
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
}
