package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Path is where Serve answers scrapes.
const Path = "/metrics"

// Serve answers scrapes of h at /metrics on ln (and 404 elsewhere) until ctx
// is done, then waits up to drain for scrapes in flight. ln must be the
// private METRICS_ADDR listener, never the public one: the metrics name
// routes, queues and job kinds, and scraping costs database reads.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, drain time.Duration) error {
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, h)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      2*ScrapeTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("metrics: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serveErr := <-done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("metrics: shut down: %w", err)
	}
	return nil
}
