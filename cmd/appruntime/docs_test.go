package main_test

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../.."

// docPages returns README.md and every page under docs/, relative to the
// repository.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs, "docs/ has no pages")
	for _, d := range docs {
		rel, err := filepath.Rel(repoRoot, d)
		require.NoError(t, err)
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
)

// prose is a page's text without its code: fenced blocks and inline code
// hold no links.
func prose(text string) string {
	return inlineCode.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// slug is GitHub's anchor for a heading's text: lower case, punctuation
// other than '-' and '_' dropped, each space a '-'.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // a link's text
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a markdown page's headings, numbered the
// way GitHub numbers repeats (x, x-1, x-2).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		s := slug(strings.ReplaceAll(m[1], "`", ""))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// anchorCache reads each page's anchors once.
type anchorCache map[string]map[string]bool

func (c anchorCache) of(t *testing.T, page string) (map[string]bool, bool) {
	if a, ok := c[page]; ok {
		return a, a != nil
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		c[page] = nil
		return nil, false
	}
	c[page] = anchors(string(raw))
	return c[page], true
}

// checkTarget says what is wrong with a link to target (path, #anchor or
// both) written in the page from; "" when it resolves.
func (c anchorCache) checkTarget(t *testing.T, from, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	page := from
	if path != "" {
		page = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path)))
		if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(page))); err != nil {
			return fmt.Sprintf("%s does not exist", page)
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(page, ".md") {
		return fmt.Sprintf("#%s points into %s, which has no headings", anchor, page)
	}
	a, _ := c.of(t, page)
	if !a[anchor] {
		return fmt.Sprintf("%s has no heading #%s", page, anchor)
	}
	return ""
}

// Every relative link and #anchor of the README and docs/ resolves.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	cache := anchorCache{}
	links := 0
	for _, page := range docPages(t) {
		raw, err := os.ReadFile(filepath.Join(repoRoot, page))
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(prose(string(raw)), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // http:, https:, mailto:
			}
			links++
			if bad := cache.checkTarget(t, page, target); bad != "" {
				t.Errorf("%s: link (%s): %s", page, target, bad)
			}
		}
	}
	require.Greater(t, links, 50, "the pages link to each other")
}

var (
	// docCite is a code comment's citation of a page: docs/x.md#anchor,
	// and further anchors of the same page after a comma (", #other").
	docCite = regexp.MustCompile(`\b((?:docs/[\w./-]+|README)\.md)((?:#[\w-]+)(?:, #[\w-]+)*)?`)
	// staleCite is a citation of a document outside the repository, or
	// of a README section by its quoted title (README "Metrics"), which
	// no test can follow.
	staleCite = regexp.MustCompile(`ARCHITECTURE\.md|README,? +"`)
)

// goFiles returns the repository's Go files, third_party left out.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "third_party" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != repoRoot) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// Every code comment that cites a doc names a page and a heading that exist.
func TestCodeCommentsCiteExistingHeadings(t *testing.T) {
	t.Parallel()
	cache := anchorCache{}
	cites := 0
	for _, file := range goFiles(t) {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repoRoot, file)
		for i, line := range strings.Split(string(raw), "\n") {
			if slices.Contains([]string{"cmd/appruntime/docs_test.go"}, filepath.ToSlash(rel)) {
				break // this file names the patterns it looks for
			}
			if staleCite.MatchString(line) {
				t.Errorf("%s:%d cites a document no test can follow; cite docs/<page>.md#<heading>: %s", rel, i+1, strings.TrimSpace(line))
			}
			for _, m := range docCite.FindAllStringSubmatch(line, -1) {
				cites++
				anchorsCited := strings.Split(strings.ReplaceAll(m[2], ", ", ""), "#")[1:]
				if len(anchorsCited) == 0 {
					anchorsCited = []string{""}
				}
				for _, a := range anchorsCited {
					target := m[1]
					if a != "" {
						target += "#" + a
					}
					// Citations are written from the repository's root.
					if bad := cache.checkTarget(t, "x", target); bad != "" {
						t.Errorf("%s:%d cites %s: %s", rel, i+1, target, bad)
					}
				}
			}
		}
	}
	require.Greater(t, cites, 20, "the code cites docs/architecture.md and the other pages")
}

// configTable returns the variables docs/operators.md's Configuration
// table names; "`WORKER_SHARE_LOOKUP`, `_EXTRACT`" names WORKER_SHARE_EXTRACT.
func configTable(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operators.md"))
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "\n## Configuration\n")
	require.GreaterOrEqual(t, start, 0, "docs/operators.md has no Configuration section")
	text = text[start+1:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	names := map[string]bool{}
	for _, row := range strings.Split(text, "\n") {
		if !strings.HasPrefix(row, "| `") {
			continue
		}
		first := strings.SplitN(row, "|", 3)[1]
		stem := ""
		for _, m := range regexp.MustCompile("`([A-Z_][A-Z0-9_]*)`").FindAllStringSubmatch(first, -1) {
			name := m[1]
			if strings.HasPrefix(name, "_") {
				name = stem + name
			} else if i := strings.LastIndex(name, "_"); i > 0 {
				stem = name[:i]
			}
			names[name] = true
		}
	}
	return names
}

// Every environment variable internal/config reads is in the Configuration
// table, and every variable the table lists is read.
func TestConfigurationTableListsEveryVariable(t *testing.T) {
	t.Parallel()
	documented := configTable(t)
	files, err := filepath.Glob(filepath.Join(repoRoot, "internal", "config", "*.go"))
	require.NoError(t, err)
	read := map[string]bool{}
	var prefixes []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+_?)"`).FindAllStringSubmatch(string(raw), -1) {
			if strings.HasSuffix(m[1], "_") {
				prefixes = append(prefixes, m[1]) // WORKER_SHARE_ + a class
			} else {
				read[m[1]] = true
			}
		}
	}
	require.Greater(t, len(read), 30, "internal/config's variables were found")
	for name := range read {
		require.True(t, documented[name], "internal/config reads %s, which docs/operators.md#configuration does not list", name)
	}
	for _, p := range prefixes {
		require.True(t, slices.ContainsFunc(slices.Collect(maps.Keys(documented)), func(d string) bool { return strings.HasPrefix(d, p) }),
			"internal/config reads %s<class>, which docs/operators.md#configuration does not list", p)
	}
	for name := range documented {
		if name == "GOMEMLIMIT" {
			continue // the Go runtime's own, which the worker sets when unset
		}
		covered := read[name] || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		require.True(t, covered, "docs/operators.md#configuration lists %s, which internal/config does not read", name)
	}
}

// The slugs are GitHub's.
func TestSlug(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"The runtime API (what a bundle calls)":   "the-runtime-api-what-a-bundle-calls",
		"/run on the worker fleet":                "run-on-the-worker-fleet",
		"Data sources (the customer's databases)": "data-sources-the-customers-databases",
		"1. Host placeholders":                    "1-host-placeholders",
		"Tools (the executors behind `/run`)":     "tools-the-executors-behind-run",
		"Webhooks: Standard Webhooks":             "webhooks-standard-webhooks",
		"A /run to the executor and back":         "a-run-to-the-executor-and-back",
	} {
		require.Equal(t, want, slug(strings.ReplaceAll(h, "`", "")), h)
	}
	require.Equal(t, map[string]bool{"a": true, "a-1": true, "b": true}, anchors("# A\n## A\n```\n# not\n```\n### B\n"))
}
