package console

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
)

// TestRefuseFormNamesTheField: every console form finds the field a
// refusal is about the same way: the field the message starts with, else
// the one it names as a whole word; the longest name wins; a longer name
// that only contains a field ("display_name", "names") does not name it.
func TestRefuseFormNamesTheField(t *testing.T) {
	t.Parallel()
	integration := []string{"secrets", "secrets.dsn", "base_url", "config", "name", "kind"}
	for _, tc := range []struct {
		msg    string
		fields []string
		want   string
	}{
		{"name is required", integration, "name"},
		{"secrets.dsn: the host is refused", integration, "secrets.dsn"},
		{"secrets must be an object", integration, "secrets"},
		{"config.code must be a string", []string{"config", "code"}, "config"},
		{"a user with email a@b.test already exists", []string{"email", "name"}, "email"},
		{"display_name is required", []string{"name"}, ""},
		{"names must differ", []string{"name"}, ""},
		{"the tool needs an integration_id", []string{"integration_id", "id"}, "integration_id"},
		{"workspace quota reached", integration, ""},
	} {
		r, refused := refuseForm(apperr.Invalidf("%s", tc.msg), tc.fields...)
		require.True(t, refused, tc.msg)
		require.Equal(t, tc.want, r.Field, tc.msg)
		require.Equal(t, http.StatusBadRequest, r.Status, tc.msg)
		if tc.want == "" {
			require.Equal(t, tc.msg, r.Page(), "a refusal about no field is shown above the form")
			require.Nil(t, r.About("name"))
		} else {
			require.Equal(t, &fieldRefusal{Field: tc.want, Message: tc.msg}, r.About(tc.want))
			require.Empty(t, r.Page())
		}
	}

	r, refused := refuseForm(apperr.Conflictf("a user with email a@b.test already exists"), "email")
	require.True(t, refused)
	require.Equal(t, http.StatusConflict, r.Status)
	for _, err := range []error{nil, apperr.NotFoundf("no such tool"), errors.New("database down")} {
		_, refused := refuseForm(err, "name")
		require.False(t, refused, "%v goes to the error page", err)
	}
}
