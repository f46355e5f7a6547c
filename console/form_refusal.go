package console

import (
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// formRefusal is why a form was refused, as the page shows it: the status
// the admin API would answer, the message, and the form field it is about
// ("" when it names none of the form's fields; the page then shows it
// above the form).
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

// Page returns the message when it is about no field of the form.
func (r formRefusal) Page() string {
	if r.Field == "" {
		return r.Message
	}
	return ""
}

// refuseForm reports whether err is a refusal a form shows with the
// admin's input kept (invalid, conflict), and which of fields its message
// names: the domain's messages start with the field ("name is required",
// "resume_webhook_url must be ...") or name it ("a user with email ...").
func refuseForm(err error, fields ...string) (formRefusal, bool) {
	if err == nil {
		return formRefusal{}, false
	}
	code, status, msg := apperr.Public(err)
	if code != apperr.Invalid && code != apperr.Conflict {
		return formRefusal{}, false
	}
	r := formRefusal{Status: status, Message: msg}
	for _, f := range fields {
		if strings.HasPrefix(msg, f+" ") || strings.HasPrefix(msg, f+":") || strings.HasPrefix(msg, f+".") || strings.Contains(msg, " "+f+" ") {
			r.Field = f
			break
		}
	}
	return r, true
}
