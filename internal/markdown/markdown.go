// Package markdown renders untrusted markdown (a tool result's markdown
// channel, seed 003) into an HTML fragment the host page can insert: raw
// HTML escaped, only absolute links live, no images. It imports nothing of
// appruntime.
package markdown

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdownRenderer is CommonMark plus GitHub's tables, strikethrough,
// autolinks and task lists, with the nodes that could reach outside the
// text rendered by safeNodes. Attribute syntax ({onclick=…}) is not enabled,
// so no author-written attribute reaches the output.
var markdownRenderer = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(safeNodes{}, 100))),
)

// Render renders a result's markdown for the host (seed 003,
// "markdown": "raw HTML is escaped … links must be absolute"):
//
//   - raw HTML, inline or as a block, is shown as text (escaped), never
//     interpreted;
//   - a link is live only when its destination is an absolute http or https
//     URL with a host, or a mailto: address; it opens in a new browsing
//     context without referrer or opener;
//   - a link to a relative path (or scheme-relative //host) is shown as dead
//     preformatted text: the path in <code class="dead-link">;
//   - a link of any other scheme (javascript:, data:, vbscript:, file:, …) is
//     shown as its text only;
//   - an image is shown as its alt text: no image is loaded, from a remote
//     origin or a data: URL, because a remote image tells its server who
//     looked and when (a tracking pixel), and the host's page policy allows
//     images from itself only.
//
// The result is an HTML fragment safe to insert in the host page.
func Render(md string) (string, error) {
	var buf bytes.Buffer
	if err := markdownRenderer.Convert([]byte(md), &buf); err != nil {
		return "", fmt.Errorf("markdown: render: %w", err)
	}
	return buf.String(), nil
}

// safeNodes renders the node kinds that goldmark's HTML renderer would let
// reach outside the text.
type safeNodes struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (safeNodes) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindImage, renderImage)
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
		}
	}
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.HTMLBlock)
	_, _ = w.WriteString("<p>")
	lines := n.Lines()
	for i := range lines.Len() {
		line := lines.At(i)
		_, _ = w.Write(util.EscapeHTML(line.Value(source)))
	}
	if n.HasClosure() {
		_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
	}
	_, _ = w.WriteString("</p>\n")
	return ast.WalkSkipChildren, nil
}

// linkKind sorts a destination: live (absolute http, https or mailto),
// relative (a path, or //host without a scheme), or other (any other scheme,
// or not parseable).
type linkKind int

const (
	linkOther linkKind = iota
	linkLive
	linkRelative
)

// classifyLink classifies dest as the browser will read it: after
// goldmark's entity resolution and percent-encoding (util.URLEscape), which
// is also exactly what an href receives.
func classifyLink(dest string) linkKind {
	u, err := url.Parse(dest)
	if err != nil {
		return linkOther
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host != "" && u.Hostname() != "" && u.User == nil {
			return linkLive
		}
		return linkOther
	case "mailto":
		if u.Opaque != "" {
			return linkLive
		}
		return linkOther
	case "":
		return linkRelative
	}
	return linkOther
}

// openLiveLink writes the start of a live link to href (already
// URL-escaped); title is written with its backslash escapes and entities
// resolved, then escaped.
func openLiveLink(w util.BufWriter, href []byte, title []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(href))
	_, _ = w.WriteString(`" rel="nofollow noopener noreferrer" target="_blank"`)
	if title != nil {
		_, _ = w.WriteString(` title="`)
		html.DefaultWriter.Write(w, title)
		_ = w.WriteByte('"')
	}
	_ = w.WriteByte('>')
}

// writeDeadLink writes a relative destination as dead preformatted text.
func writeDeadLink(w util.BufWriter, dest []byte) {
	_, _ = w.WriteString(`<code class="dead-link">`)
	_, _ = w.Write(util.EscapeHTML(dest))
	_, _ = w.WriteString(`</code>`)
}

func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	href := util.URLEscape(n.Destination, true)
	switch classifyLink(string(href)) {
	case linkLive:
		if entering {
			openLiveLink(w, href, n.Title)
		} else {
			_, _ = w.WriteString("</a>")
		}
	case linkRelative:
		if entering {
			writeDeadLink(w, n.Destination)
		}
		return ast.WalkSkipChildren, nil
	}
	// Any other scheme: the children render as plain text.
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	dest := n.URL(source)
	if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
		dest = append([]byte("mailto:"), dest...)
	}
	label := util.EscapeHTML(n.Label(source))
	href := util.URLEscape(dest, false)
	if classifyLink(string(href)) != linkLive {
		_, _ = w.Write(label)
		return ast.WalkContinue, nil
	}
	openLiveLink(w, href, nil)
	_, _ = w.Write(label)
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// renderImage writes nothing of the image itself: its children (the alt
// text) render as text.
func renderImage(util.BufWriter, []byte, ast.Node, bool) (ast.WalkStatus, error) {
	return ast.WalkContinue, nil
}
