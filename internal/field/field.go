// Package field holds the checks of admin-entered fields that several
// domain packages share (names of bundles, agents, tools…), so that every
// surface refuses the same input with the same message.
package field

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Name trims raw and checks it is a usable display name: present, at most
// max characters, no control characters. field names it in the error.
func Name(raw, field string, max int) (string, error) {
	name := strings.TrimSpace(raw)
	switch {
	case name == "":
		return "", apperr.Invalidf("%s is required", field)
	case utf8.RuneCountInString(name) > max:
		return "", apperr.Invalidf("%s is longer than %d characters", field, max)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", apperr.Invalidf("%s may not contain control characters", field)
	}
	return name, nil
}

// OptionalName is Name for a name that may be left out: raw trimmed to ""
// is accepted as "", anything else must pass Name.
func OptionalName(raw, field string, max int) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", nil
	}
	return Name(raw, field, max)
}
