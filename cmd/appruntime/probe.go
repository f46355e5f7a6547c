package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
)

// probeTimeout bounds one `appruntime probe`: a container healthcheck that
// hangs is as bad as one that fails, and /readyz answers within two seconds.
const probeTimeout = 3 * time.Second

// runProbe is `appruntime probe URL`: it GETs URL and succeeds on a 2xx
// answer. The images carry no shell or curl (the runtime image is
// distroless), so Compose healthchecks on /healthz and /readyz call the
// binary itself.
func runProbe(ctx context.Context, args []string) error {
	var u *url.URL
	if len(args) == 1 {
		u, _ = url.Parse(args[0])
	}
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintln(os.Stderr, "usage: appruntime probe http://127.0.0.1:8080/readyz")
		return errUsage
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", u.Redacted(), resp.Status)
	}
	return nil
}
