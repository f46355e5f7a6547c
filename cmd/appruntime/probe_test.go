package main_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProbe runs `appruntime probe` as a container healthcheck would: the
// exit code is 0 on a 2xx answer, 1 on any other answer or no answer, and 2
// on a command line that gives no http(s) URL.
func TestProbe(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"healthy", []string{srv.URL + "/healthz"}, 0},
		{"not ready", []string{srv.URL + "/readyz"}, 1},
		{"nothing listening", []string{closed.URL + "/healthz"}, 1},
		{"no url", nil, 2},
		{"two urls", []string{srv.URL, srv.URL}, 2},
		{"not http", []string{"tcp://127.0.0.1:8080"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := exec.Command(binary, append([]string{"probe"}, tc.args...)...).Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.code, code)
		})
	}
}
