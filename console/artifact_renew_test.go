package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRenewRefusesWhatItDoesNotRead: the renewal route decodes its body
// strictly like every other, and mints only with the page's CSRF token.
func TestRenewRefusesWhatItDoesNotRead(t *testing.T) {
	t.Parallel()
	s := newTestConsole(t)
	f := seedDemo(t, s.P, s.Tenant)
	cl := s.signedIn(t)
	path := "/tasks/" + f.TaskID + "/steps/" + f.StepID + "/artifact/session"
	renew := func(csrf, body string) page {
		req, err := http.NewRequest(http.MethodPost, cl.base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", csrf)
		return cl.do(req)
	}
	require.Equal(t, http.StatusForbidden, renew("", `{}`).Status, "no CSRF token, no session")
	for _, body := range []string{`{"replace":"x"}`, `{"replaces":"","replaces":""}`, `{"replaces":"not-an-id"}`, `[]`} {
		p := renew(cl.csrf, body)
		require.Equal(t, http.StatusBadRequest, p.Status, "%s: %s", body, p.Body)
	}
	p := renew(cl.csrf, `{}`)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `"session_token"`)
}
