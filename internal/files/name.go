package files

import (
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/document"
)

// MaxNameBytes caps a file's name: what file systems take, so that a
// download can be saved under its name.
const MaxNameBytes = 255

// fallbackName names a file whose name has nothing left once cleaned.
const fallbackName = "document"

// CleanName makes an uploaded name safe to store, show and offer as a
// download: only the part after the last '/' or '\' (browsers send
// C:\Users\…\invoice.pdf), without control or invisible formatting
// characters (a right-to-left override turns "fdp.exe" into "exe.pdf" on
// screen), white space collapsed, no leading or trailing dots or spaces,
// an extension that matches the content type (one is appended when it
// does not: "report.exe" that is a PDF becomes "report.exe.pdf"), and at
// most MaxNameBytes bytes, cut on a character with the extension kept.
func CleanName(name, contentType string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	name = strings.Trim(b.String(), ". ")
	if name == "" {
		name = fallbackName
	}
	exts := document.Extensions(contentType)
	ext := path.Ext(name)
	if len(exts) > 0 && !slices.Contains(exts, strings.ToLower(ext)) {
		ext = exts[0]
		name += ext
	}
	if len(name) <= MaxNameBytes {
		return name
	}
	stem := name[:len(name)-len(ext)]
	cut := MaxNameBytes - len(ext)
	for cut > 0 && !utf8.RuneStart(stem[cut]) {
		cut--
	}
	return strings.TrimRight(stem[:cut], ". ") + ext
}
