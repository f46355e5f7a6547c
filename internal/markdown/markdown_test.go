package markdown_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/appruntime/appruntime/internal/markdown"
)

// TestRender is the XSS and link table: raw HTML escaped, only
// absolute http(s) and mailto links live, relative paths dead, no images.
func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		md   string
		want string
	}{
		{"emphasis and a list", "**Saved** 2 items:\n\n- a\n- b", "<p><strong>Saved</strong> 2 items:</p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"},
		{"inline script escaped", "hi <script>alert(1)</script>", "<p>hi &lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		{"html block escaped", "<div onclick=\"x()\">\nhi\n</div>", "<p>&lt;div onclick=&quot;x()&quot;&gt;\nhi\n&lt;/div&gt;</p>\n"},
		{"img onerror escaped", `<img src=x onerror=alert(1)>`, "<p>&lt;img src=x onerror=alert(1)&gt;</p>\n"},
		{"absolute https link", "[docs](https://docs.example.com/a?b=1&c=2)",
			`<p><a href="https://docs.example.com/a?b=1&amp;c=2" rel="nofollow noopener noreferrer" target="_blank">docs</a></p>` + "\n"},
		{"mailto link", "[mail](mailto:ann@example.com)",
			`<p><a href="mailto:ann@example.com" rel="nofollow noopener noreferrer" target="_blank">mail</a></p>` + "\n"},
		{"relative path is dead preformatted text", "[report](/files/report.pdf)", `<p><code class="dead-link">/files/report.pdf</code></p>` + "\n"},
		{"bare relative path", "[x](reports/q1)", `<p><code class="dead-link">reports/q1</code></p>` + "\n"},
		{"scheme-relative is not absolute", "[x](//evil.example/a)", `<p><code class="dead-link">//evil.example/a</code></p>` + "\n"},
		{"javascript link is text", "[click](javascript:alert(1))", "<p>click</p>\n"},
		{"javascript with entities is text", "[click](jav&#x09;ascript:alert(1))", "<p>click</p>\n"},
		{"upper-case JavaScript is text", "[click](JAVASCRIPT:alert(1))", "<p>click</p>\n"},
		{"data link is text", "[d](data:text/html;base64,PHNjcmlwdD4=)", "<p>d</p>\n"},
		{"vbscript link is text", "[v](vbscript:msgbox)", "<p>v</p>\n"},
		{"remote image is its alt text", "![a chart](https://tracker.example/pixel.png)", "<p>a chart</p>\n"},
		{"data image is its alt text", "![dot](data:image/png;base64,iVBORw0KGgo=)", "<p>dot</p>\n"},
		{"autolink", "<https://example.com/x>", `<p><a href="https://example.com/x" rel="nofollow noopener noreferrer" target="_blank">https://example.com/x</a></p>` + "\n"},
		{"autolink javascript is text", "<javascript:alert(1)>", "<p>javascript:alert(1)</p>\n"},
		{"bare www linkified", "see www.example.com", `<p>see <a href="http://www.example.com" rel="nofollow noopener noreferrer" target="_blank">www.example.com</a></p>` + "\n"},
		{"title attribute escaped", `[x](https://e.example "a\" onmouseover=\"b")`,
			`<p><a href="https://e.example" rel="nofollow noopener noreferrer" target="_blank" title="a&quot; onmouseover=&quot;b">x</a></p>` + "\n"},
		{"attribute syntax is not enabled", "# Title {onclick=alert(1)}", "<h1>Title {onclick=alert(1)}</h1>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := markdown.Render(tt.md)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.NoError(t, checkSafeHTML(got))
		})
	}
}

// allowedTags are the elements rendered markdown may hold.
var allowedTags = []string{"p", "br", "hr", "em", "strong", "del", "code", "pre", "blockquote", "ul", "ol", "li",
	"h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td", "input"}

// checkSafeHTML tokenizes out as a browser would and refuses anything that
// runs or loads: an element outside allowedTags, an on* attribute, a src,
// a style, an href that is not absolute http(s) or mailto, an input that is
// not a disabled checkbox (GFM task lists).
func checkSafeHTML(out string) error {
	z := html.NewTokenizer(strings.NewReader(out))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if !slices.Contains(allowedTags, tok.Data) {
				return fmt.Errorf("element <%s> in %q", tok.Data, out)
			}
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Key] = a.Val
				key := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(key, "on"), key == "src", key == "style", key == "srcset", key == "formaction":
					return fmt.Errorf("attribute %s in %q", a.Key, out)
				case key == "href":
					v := strings.ToLower(strings.TrimSpace(a.Val))
					if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "mailto:") {
						return fmt.Errorf("href %q in %q", a.Val, out)
					}
				}
			}
			if tok.Data == "input" && (attrs["type"] != "checkbox" || !hasKey(tok.Attr, "disabled")) {
				return fmt.Errorf("input that is not a disabled checkbox in %q", out)
			}
		}
	}
}

func hasKey(attrs []html.Attribute, key string) bool {
	return slices.ContainsFunc(attrs, func(a html.Attribute) bool { return a.Key == key })
}

// FuzzRender: whatever the markdown, the output holds nothing that
// runs or loads.
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		"<script>alert(1)</script>", "[x](javascript:alert(1))", "![x](https://t.example/p.png)",
		`<img src=x onerror=alert(1)>`, "[x](data:text/html,<script>)", "<a href=\"javascript:x\">y</a>",
		"[x](java\tscript:y)", "<svg onload=alert(1)>", "- [ ] task\n- [x] done", "| a | b |\n|---|---|\n| <b> | c |",
		"<https://x.example>", "www.example.com/<script>", "[x]( https://a.example )", "[a](<javascript:b>)",
		"```html\n<script>\n```", "<!-- c --><iframe src=x>", "[x][r]\n\n[r]: javascript:y", "&lt;script&gt;",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out, err := markdown.Render(md)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSafeHTML(out); err != nil {
			t.Fatal(err)
		}
	})
}
