package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Dial and transport limits of outbound connections.
const (
	// DialTimeout is the connect timeout of every outbound connection.
	DialTimeout         = 5 * time.Second
	TLSHandshakeTimeout = 5 * time.Second
	MaxIdleConnsPerHost = 64
	// MaxRedirects bounds how many redirects a client follows; each hop is
	// dialed through the same guard.
	MaxRedirects = 5
)

// metadataAddrs are cloud metadata endpoints. They are refused even when an
// allowed prefix (OUTBOUND_ALLOW_CIDRS) covers them: AWS, GCP and Azure
// (169.254.169.254 and AWS's IPv6 fd00:ec2::254), AWS ECS task metadata
// (169.254.170.2) and Alibaba Cloud (100.100.100.200).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("fd00:ec2::254"),
}

// IPv6 ranges that carry an IPv4 address inside them.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // RFC 4291 (deprecated)
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT, RFC 2765
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215
	sixToFour      = netip.MustParsePrefix("2002::/16")       // RFC 3056
	teredo         = netip.MustParsePrefix("2001::/32")       // RFC 4380
)

// NewDialer returns a dialer that checks the address it is about to connect
// to, after DNS resolution and for each address it tries, so a name that
// resolves (or re-resolves, DNS rebinding) to a refused address is never
// reached. It refuses every special-purpose range of the IANA registries
// (private, loopback, link-local, CGNAT, multicast, reserved, documentation,
// IPv6 outside global unicast: code.dny.dev/ssrf) and adds what that
// library leaves to its caller: the cloud metadata addresses are refused
// even inside an allowed prefix, and an IPv6 address that embeds an IPv4 one
// (IPv4-mapped, -compatible or -translated, NAT64 64:ff9b::/96 and
// 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32) is refused when the
// IPv4 address would be, even when an allowed prefix covers the IPv6 one.
// allow is the deployment's OutboundAllow (empty in production; tests list
// 127.0.0.0/8). Any TCP port is permitted: upstreams use non-standard
// ports, and the address ranges are what keeps internal services out of
// reach.
func NewDialer(allow []netip.Prefix) *net.Dialer {
	return &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Control: newGuard(allow).control}
}

// CheckAddr reports, without dialing, whether the guard of NewDialer(allow)
// would connect to addr: nil, or an error IsBlocked recognises. It is the
// same policy applied to a literal address someone names rather than
// dials, such as an origin a bundle declares
// (docs/bundle-authors.md#declaring-network-grants).
func CheckAddr(addr netip.Addr, allow []netip.Prefix) error {
	network := "tcp6" // what a dialer's Control sees
	if addr.Unmap().Is4() {
		network = "tcp4"
	}
	return newGuard(allow).control(network, netip.AddrPortFrom(addr, 443).String(), nil)
}

// newGuard returns the guard of the dialers built on allow.
func newGuard(allow []netip.Prefix) guard {
	var v4, v6 []netip.Prefix
	for _, p := range allow {
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked())
		} else {
			v6 = append(v6, p.Masked())
		}
	}
	return guard{named: namedLoopback(v6), ssrf: ssrf.New(
		ssrf.WithAnyPort(),
		ssrf.WithAllowedV4Prefixes(v4...),
		ssrf.WithAllowedV6Prefixes(v6...),
	)}
}

// guard is the dialer's Control function: ssrf's checks and ours.
type guard struct {
	ssrf *ssrf.Guardian
	// named holds :: and ::1 when an allowed prefix names exactly that
	// address (::1/128, as a data source allow list may): they are then
	// the IPv6 loopback (or unspecified) address, not an IPv4-compatible
	// form of 0.0.0.x. A wider prefix such as ::/96 does not name them.
	named []netip.Addr
}

// namedLoopback returns :: and ::1 when a prefix of length 127 or 128 covers them.
func namedLoopback(v6 []netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for _, a := range []netip.Addr{netip.IPv6Unspecified(), netip.IPv6Loopback()} {
		for _, p := range v6 {
			if p.Bits() >= 127 && p.Contains(a) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

func (g guard) control(network, address string, c syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: could not parse %s", ssrf.ErrInvalidHostPort, address)
	}
	addr := ap.Addr().Unmap()
	if slices.Contains(metadataAddrs, addr) {
		return fmt.Errorf("%w: %s is a cloud metadata address", ssrf.ErrProhibitedIP, addr)
	}
	if slices.Contains(g.named, ap.Addr()) {
		return g.ssrf.Safe(network, address, c)
	}
	for _, v4 := range embeddedIPv4(ap.Addr()) {
		if slices.Contains(metadataAddrs, v4) {
			return fmt.Errorf("%w: %s embeds the cloud metadata address %s", ssrf.ErrProhibitedIP, ap.Addr(), v4)
		}
		if err := g.ssrf.SafeAddr(v4); err != nil {
			return fmt.Errorf("%w: %s embeds %s", ssrf.ErrProhibitedIP, ap.Addr(), v4)
		}
	}
	return g.ssrf.Safe(network, address, c)
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries by one of
// the transition mechanisms. Inside the local-use NAT64 prefix
// 64:ff9b:1::/48 the address is taken from the last 32 bits, the layout of a
// /96 network carved from it (RFC 6052 allows other lengths there, which a
// deployment that allows the prefix must not use).
func embeddedIPv4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case a.Is4In6(), ipv4Translated.Contains(a), nat64WellKnown.Contains(a), nat64Local.Contains(a):
		return []netip.Addr{last}
	case ipv4Compatible.Contains(a):
		// :: and ::1 read as 0.0.0.0 and 0.0.0.1: refused with "this
		// network" unless the allow list names them (guard.control).
		return []netip.Addr{last}
	case sixToFour.Contains(a):
		return []netip.Addr{netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})}
	case teredo.Contains(a):
		// The Teredo server's address in clear, the client's obfuscated.
		server := netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{server, client}
	}
	return nil
}

// NewTransport returns an HTTP transport that dials only through
// NewDialer(allow). It ignores proxy environment variables: a proxy would
// make the guard check the proxy's address instead of the destination's.
func NewTransport(allow []netip.Prefix) *http.Transport {
	return transportOn(NewDialer(allow))
}

func transportOn(d *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   TLSHandshakeTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// NewClient returns an HTTP client on NewTransport(allow) with an overall
// timeout per request (0: none, the caller's context decides). Redirects are
// followed at most MaxRedirects times, only to http and https URLs, never
// for a request that carries credentials (Authorization, Cookie), and every
// hop is dialed through the same guard.
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
			if first := via[0].Header; first.Get("Authorization") != "" || first.Get("Cookie") != "" {
				return errRedirectWithCredentials
			}
			return nil
		},
	}
}

// errRedirectWithCredentials refuses to carry credentials to wherever a
// redirect points.
var errRedirectWithCredentials = errors.New("gateway: a request carrying credentials is not redirected")

// BlockedReason says, in the product's words, why the guard refused a
// destination (IsBlocked): what an admin testing a connection is told.
const BlockedReason = "the host resolves to an address the platform never connects to (loopback, private, link-local or another special-purpose network; OUTBOUND_ALLOW_CIDRS lets chosen networks through)"

// IsBlocked reports whether err is the guard refusing a destination (an
// address in a refused range, or a network type other than TCP), as opposed
// to the destination failing. Retrying a blocked request cannot succeed.
func IsBlocked(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedNetwork) ||
		errors.Is(err, ssrf.ErrProhibitedPort) || errors.Is(err, ssrf.ErrInvalidHostPort)
}
