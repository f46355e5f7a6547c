package files_test

import (
	"path"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/files"
)

// FuzzCleanName: whatever a client sends, the stored name is one short,
// valid, visible segment with its type's extension.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"invoice.pdf", `C:\a\b.pdf`, "../../x", "a\u202eb", "..", "", strings.Repeat("é", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := files.CleanName(name, document.TypePDF)
		switch {
		case got == "" || len(got) > files.MaxNameBytes || !utf8.ValidString(got):
			t.Fatalf("%q → %q: empty, long or not UTF-8", name, got)
		case strings.ContainsAny(got, `/\`) || strings.HasPrefix(got, ".") || strings.HasSuffix(got, " "):
			t.Fatalf("%q → %q: a path or a hidden name", name, got)
		case !slices.Contains(document.Extensions(document.TypePDF), strings.ToLower(path.Ext(got))):
			t.Fatalf("%q → %q: not a .pdf", name, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("%q → %q: holds %U", name, got, r)
			}
		}
	})
}
