package console

import (
	"cmp"
	"slices"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// formRefusal is why a form was refused, as the page shows it: the status
// the admin API would answer, the message, and the form field it is about
// ("" when it names none of the form's fields; the page then shows it
// above the form). Every console form keeps the admin's input and shows
// its refusal through it.
type formRefusal struct {
	Status  int
	Field   string
	Message string
}

// For returns the message when the refusal is about field, for the page to
// show beside that field.
func (r formRefusal) For(field string) string {
	if r.Field == field {
		return r.Message
	}
	return ""
}

// fieldRefusal is a refusal about one field, for the "fieldRefusal"
// partial (templates/form_refusal.html).
type fieldRefusal struct{ Field, Message string }

// About returns the refusal when it is about field, nil otherwise: the
// "fieldRefusal" partial renders nothing for nil.
func (r formRefusal) About(field string) *fieldRefusal {
	if r.Field != field || r.Message == "" {
		return nil
	}
	return &fieldRefusal{Field: field, Message: r.Message}
}

// Page returns the message when it is about no field of the form.
func (r formRefusal) Page() string {
	if r.Field == "" {
		return r.Message
	}
	return ""
}

// refuseForm reports whether err is a refusal a form shows with the
// admin's input kept (invalid, conflict), and which of fields its message
// names (fieldNamed). Any other error goes to the error page.
func refuseForm(err error, fields ...string) (formRefusal, bool) {
	if err == nil {
		return formRefusal{}, false
	}
	code, status, msg := apperr.Public(err)
	if code != apperr.Invalid && code != apperr.Conflict {
		return formRefusal{}, false
	}
	return formRefusal{Status: status, Message: msg, Field: fieldNamed(msg, fields)}, true
}

// fieldNamed returns the field of fields that msg is about: the one it
// starts with ("name is required", "secrets.dsn: …", "config.code …"),
// else the first it names as a word ("a user with email … exists"); the
// longest wins, so "secrets.dsn" beats "secrets". "" when it names none.
func fieldNamed(msg string, fields []string) string {
	byLength := slices.Clone(fields)
	slices.SortStableFunc(byLength, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, f := range byLength {
		if namesAt(msg, f, 0) {
			return f
		}
	}
	for _, f := range byLength {
		for i := strings.Index(msg, f); i >= 0; {
			if namesAt(msg, f, i) {
				return f
			}
			next := strings.Index(msg[i+1:], f)
			if next < 0 {
				break
			}
			i += 1 + next
		}
	}
	return ""
}

// namesAt reports whether msg holds field f as a whole name at i: not part
// of a longer name on either side ("name" is not in "display_name" or
// "names"; "config" is in "config.code").
func namesAt(msg, f string, i int) bool {
	if !strings.HasPrefix(msg[i:], f) {
		return false
	}
	if i > 0 && (isNameByte(msg[i-1]) || msg[i-1] == '.') {
		return false
	}
	end := i + len(f)
	return end == len(msg) || !isNameByte(msg[end])
}

// isNameByte reports whether b may be part of a field name.
func isNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}
