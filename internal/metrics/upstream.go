package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outbound client names (the client label) of the calls not made by the
// gateway, which names its own (gateway.ClientHTTPCall, ClientToken).
const (
	ClientWebhook = "webhook"
	// ClientConnCheck is an admin's "test connection" of a REST or
	// component integration.
	ClientConnCheck = "conncheck"
)

// statusClasses are the status label values of an outbound call.
var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// Transport returns a RoundTripper that records each outbound request's time
// to response headers and its status class under client (a name from our
// code: "http_call", "token", "webhook", "translate", "extraction"…). Wrap
// the gateway's transports with it. next nil is http.DefaultTransport; a nil
// *Metrics returns next itself.
func (m *Metrics) Transport(client string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if m == nil {
		return next
	}
	t := &upstreamTransport{next: next, failed: m.upstream.WithLabelValues(client, "error")}
	for i, class := range statusClasses {
		t.byClass[i] = m.upstream.WithLabelValues(client, class)
	}
	return t
}

type upstreamTransport struct {
	next    http.RoundTripper
	byClass [len(statusClasses)]prometheus.Observer
	failed  prometheus.Observer
}

func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.next.RoundTrip(req)
	d := time.Since(start).Seconds()
	switch {
	case err != nil:
		t.failed.Observe(d)
	case res.StatusCode >= 100 && res.StatusCode < 600:
		t.byClass[res.StatusCode/100-1].Observe(d)
	default:
		t.failed.Observe(d)
	}
	return res, err
}

// CloseIdleConnections reaches the wrapped transport, so
// http.Client.CloseIdleConnections still works.
func (t *upstreamTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
