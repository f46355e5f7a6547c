package gateway

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"time"

	"code.dny.dev/ssrf"
)

// Dial and transport limits of outbound connections.
const (
	DialTimeout         = 5 * time.Second
	TLSHandshakeTimeout = 5 * time.Second
	MaxIdleConnsPerHost = 8
	// MaxRedirects bounds how many redirects a client follows; each hop is
	// dialed through the same guard.
	MaxRedirects = 5
)

// NewDialer returns a dialer that checks the address it is about to connect
// to, after DNS resolution, so a name that resolves (or re-resolves, DNS
// rebinding) to a refused address is never reached. It refuses every
// special-purpose range of the IANA registries (private, loopback,
// link-local and with it the cloud metadata address 169.254.169.254, CGNAT,
// multicast, documentation, IPv6 outside global unicast) unless the address
// lies in one of allow, the deployment's OutboundAllow (empty in production;
// tests list 127.0.0.0/8). Any TCP port is permitted: upstreams use
// non-standard ports, and the address ranges are what keeps internal
// services out of reach.
func NewDialer(allow []netip.Prefix) *net.Dialer {
	var v4, v6 []netip.Prefix
	for _, p := range allow {
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked())
		} else {
			v6 = append(v6, p.Masked())
		}
	}
	guard := ssrf.New(
		ssrf.WithAnyPort(),
		ssrf.WithAllowedV4Prefixes(v4...),
		ssrf.WithAllowedV6Prefixes(v6...),
	)
	return &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Control: guard.Safe}
}

// NewTransport returns an HTTP transport that dials only through
// NewDialer(allow). It ignores proxy environment variables: a proxy would
// make the guard check the proxy's address instead of the destination's.
func NewTransport(allow []netip.Prefix) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           NewDialer(allow).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   TLSHandshakeTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// NewClient returns an HTTP client on NewTransport(allow) with an overall
// timeout per request (0: none, the caller's context decides). Redirects are
// followed at most MaxRedirects times, only to http and https URLs, and
// every hop is dialed through the same guard.
func NewClient(allow []netip.Prefix, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: NewTransport(allow),
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= MaxRedirects {
				return errors.New("gateway: too many redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errors.New("gateway: redirect to a non-HTTP URL refused")
			}
			return nil
		},
	}
}

// IsBlocked reports whether err is the guard refusing a destination (an
// address in a refused range, or a network type other than TCP), as opposed
// to the destination failing. Retrying a blocked request cannot succeed.
func IsBlocked(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedNetwork) ||
		errors.Is(err, ssrf.ErrProhibitedPort) || errors.Is(err, ssrf.ErrInvalidHostPort)
}
