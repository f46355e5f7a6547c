package placeholder_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/placeholder"
)

// fuzzTemplates are url templates with placeholders wherever a binding may
// put them: one host label, whole and partial path segments, query values.
var fuzzTemplates = []struct {
	tmpl      string
	hostLabel int // index of the placeholder host label, or -1
}{
	{"https://{{a}}.example.com:8443/v1/{{b}}/items/{{c}}?q={{a}}&limit=10#top", 0},
	{"http://api.example.com/{{a}}{{b}}/x{{c}}y?k={{b}}-{{c}}&z=1&k=2", -1},
	{"https://{{a}}.api.example.net/{{b}}/{{c}}/", 0},
	{"http://127.0.0.1:9000/files/{{a}}.{{b}}?download={{c}}", -1},
	{"https://api.example.com/search?q={{a}}&page={{b}}&sort={{c}}#results", -1},
}

// FuzzFillURL checks what no value may change in a filled url: the scheme,
// the host apart from its placeholder label, the port, the (absent)
// userinfo, the number of path segments, the query keys and the fragment;
// and that net/http sends the path and query exactly as filled. A value
// may only be refused, with a 400 or a 403.
func FuzzFillURL(f *testing.F) {
	for i := range fuzzTemplates {
		for _, v := range []string{"acme", "..", "%2e%2e", "a/b", "a?b=c", "#", "\r\n", "a\uff0eevil", "-a", "xn--pple-43d", "[::1]", "%00", "", "a@b:1"} {
			f.Add(uint8(i), v, "b", "c")
			f.Add(uint8(i), "acme", v, v)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, a, b, c string) {
		ft := fuzzTemplates[int(which)%len(fuzzTemplates)]
		ref := mustParse(t, fill(t, ft.tmpl, "x", "x", "x"))
		filled, err := placeholder.URL(ft.tmpl, src(map[string]any{"a": a, "b": b, "c": c}))
		if err != nil {
			if code := apperr.CodeOf(err); code != apperr.Invalid && code != apperr.Forbidden {
				t.Fatalf("refused with %s, not 400 or 403: %v", code, err)
			}
			return
		}
		got := mustParse(t, filled)
		if got.Scheme != ref.Scheme || got.User != nil || got.Opaque != "" || got.Port() != ref.Port() {
			t.Fatalf("%q: scheme, userinfo or port moved: %q", filled, got.Host)
		}
		gotLabels, refLabels := strings.Split(got.Hostname(), "."), strings.Split(ref.Hostname(), ".")
		if len(gotLabels) != len(refLabels) {
			t.Fatalf("%q: host %q has other labels than %q", filled, got.Hostname(), ref.Hostname())
		}
		for i := range refLabels {
			if i == ft.hostLabel {
				if !placeholder.HostLabel(gotLabels[i]) {
					t.Fatalf("%q: host label %q is not a DNS label", filled, gotLabels[i])
				}
			} else if gotLabels[i] != refLabels[i] {
				t.Fatalf("%q: host %q moved from %q", filled, got.Hostname(), ref.Hostname())
			}
		}
		if n, m := strings.Count(got.EscapedPath(), "/"), strings.Count(ref.EscapedPath(), "/"); n != m {
			t.Fatalf("%q: %d path segments, not %d", filled, n, m)
		}
		if got.Fragment != ref.Fragment || got.RawFragment != ref.RawFragment {
			t.Fatalf("%q: fragment %q, not %q", filled, got.Fragment, ref.Fragment)
		}
		if gk, rk := queryKeys(t, got), queryKeys(t, ref); !slices.Equal(gk, rk) {
			t.Fatalf("%q: query keys %q, not %q", filled, gk, rk)
		}
		req, err := http.NewRequest("GET", filled, nil)
		if err != nil {
			t.Fatalf("%q: net/http refuses it: %v", filled, err)
		}
		sent := req.URL.RequestURI()
		want := filled[len(got.Scheme+"://"+got.Host):]
		if i := strings.IndexByte(want, '#'); i >= 0 {
			want = want[:i]
		}
		if want == "" {
			want = "/"
		}
		if sent != want {
			t.Fatalf("net/http sends %q, not the filled %q", sent, want)
		}
	})
}

func fill(t *testing.T, tmpl, a, b, c string) string {
	t.Helper()
	s, err := placeholder.URL(tmpl, src(map[string]any{"a": a, "b": b, "c": c}))
	if err != nil {
		t.Fatalf("reference fill of %q: %v", tmpl, err)
	}
	return s
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("filled url %q does not parse: %v", s, err)
	}
	return u
}

// queryKeys returns the query's keys, each as often as it occurs, sorted.
func queryKeys(t *testing.T, u *url.URL) []string {
	t.Helper()
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		t.Fatalf("query %q does not parse: %v", u.RawQuery, err)
	}
	var keys []string
	for k, vs := range q {
		for range vs {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
