package store

import "strings"

// MaxSearchRunes bounds the text a search box may send: longer text is cut,
// so a pasted document cannot become a pattern the database scans with.
const MaxSearchRunes = 200

// LikeEscape is the ESCAPE clause that goes with every pattern Contains
// makes; both dialects read '\' as one backslash.
const LikeEscape = ` ESCAPE '\'`

// Contains returns the LIKE pattern that finds text anywhere in a lowered
// column ("LOWER(col) LIKE ?"+LikeEscape): text lowered, trimmed, cut to
// MaxSearchRunes, with %, _ and \ escaped so they match themselves. LOWER
// and the lowered pattern make it case-insensitive on Postgres and SQLite.
func Contains(text string) string {
	text = strings.ToLower(strings.TrimSpace(text))
	if r := []rune(text); len(r) > MaxSearchRunes {
		text = string(r[:MaxSearchRunes])
	}
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(text) + "%"
}
