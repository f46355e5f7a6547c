package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/gateway"
)

// countingServer is a receiver on addr that counts the requests it sees.
func countingServer(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &hits
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func TestLoopbackAllowedWhenListed(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, "127.0.0.1:0", ok)
	res, err := gateway.NewClient(loopback, 5*time.Second).Get(srv.URL)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	require.EqualValues(t, 1, hits.Load())
}

func TestRedirectToRefusedAddress(t *testing.T) {
	t.Parallel()
	// The target listens on 127.0.0.2, outside the one address allowed, so
	// only the redirect hop is refused.
	target, targetHits := countingServer(t, "127.0.0.2:0", ok)
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	for _, to := range []string{target.URL + "/hook", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"} {
		front, frontHits := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, http.StatusFound)
		})
		res, err := gateway.NewClient(allow, 5*time.Second).Get(front.URL)
		if res != nil {
			res.Body.Close()
		}
		require.Error(t, err, to)
		require.True(t, gateway.IsBlocked(err), "%s: %v", to, err)
		require.EqualValues(t, 1, frontHits.Load(), "the first hop is allowed")
	}
	require.Zero(t, targetHits.Load(), "the redirect target must never be reached")
}

func TestDialerRefusesSpecialRanges(t *testing.T) {
	t.Parallel()
	d := gateway.NewDialer(nil)
	for _, addr := range []string{
		"127.0.0.1:80",         // loopback
		"10.1.2.3:443",         // private
		"172.16.0.1:443",       // private
		"192.168.1.1:8080",     // private
		"169.254.169.254:80",   // link-local: cloud metadata
		"100.100.100.200:80",   // CGNAT: some clouds' metadata
		"0.0.0.0:80",           // this network
		"224.0.0.1:80",         // multicast
		"[::1]:80",             // IPv6 loopback
		"[fe80::1]:80",         // IPv6 link-local
		"[fd00:ec2::254]:80",   // IPv6 unique local: AWS metadata
		"[::ffff:10.0.0.1]:80", // IPv4-mapped private
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := d.DialContext(ctx, "tcp", addr)
		cancel()
		if conn != nil {
			conn.Close()
		}
		require.Error(t, err, addr)
		require.True(t, gateway.IsBlocked(err), "%s: %v", addr, err)
	}
}

func TestAllowListIsExact(t *testing.T) {
	t.Parallel()
	// Allowing loopback does not open the private ranges.
	d := gateway.NewDialer(loopback)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := d.DialContext(ctx, "tcp", "10.0.0.1:80")
	require.True(t, gateway.IsBlocked(err), "%v", err)
}

// With the allow setting off, nothing local is reachable, however it is
// spelled, and the receiver never sees a connection.
func TestDialRefusedWithAllowOff(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, "127.0.0.1:0", ok)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := gateway.NewClient(nil, 5*time.Second)
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "0.0.0.0", "[::1]", "169.254.169.254", "[::ffff:7f00:1]"} {
		res, err := c.Get("http://" + host + ":" + port + "/")
		if res != nil {
			res.Body.Close()
		}
		require.Error(t, err, host)
		require.True(t, gateway.IsBlocked(err), "%s: %v", host, err)
	}
	require.Zero(t, hits.Load(), "the receiver must never be reached")
}

// The guard's verdict on each address form, checked on the address the
// dialer is about to connect to (no connection is made).
func TestGuardVerdicts(t *testing.T) {
	t.Parallel()
	transition := []netip.Prefix{
		netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("2002::/16"), netip.MustParsePrefix("2001::/32"),
		netip.MustParsePrefix("::/96"), netip.MustParsePrefix("::ffff:0:0:0/96"),
	}
	linkLocal := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("100.64.0.0/10")}
	cases := []struct {
		allow   []netip.Prefix
		address string
		blocked bool
	}{
		{nil, "93.184.216.34:443", false},
		{nil, "[2606:2800:220:1::1]:443", false},
		{nil, "127.0.0.1:80", true},
		{nil, "0.0.0.0:80", true},
		{nil, "[::]:80", true},
		{nil, "[::1]:80", true},
		{nil, "[::ffff:127.0.0.1]:80", true},
		{nil, "[::ffff:93.184.216.34]:80", true}, // mapped forms are refused outright
		{nil, "169.254.169.254:80", true},
		{nil, "[fd00:ec2::254]:80", true},
		{nil, "100.64.0.1:80", true},
		{nil, "224.0.0.1:80", true},
		{nil, "240.0.0.1:80", true},
		{nil, "255.255.255.255:80", true},
		{nil, "[64:ff9b::808:808]:80", true}, // NAT64 is outside global unicast unless allowed
		{nil, "[2002:808:808::1]:80", true},
		{nil, "[2001:0:808:808::f7f7:fbfb]:80", true},
		{nil, "[ff02::1]:80", true},
		{nil, "not-an-address:80", true},

		// Metadata stays refused inside an allowed prefix.
		{linkLocal, "169.254.1.1:80", false},
		{linkLocal, "169.254.169.254:80", true},
		{linkLocal, "169.254.170.2:80", true},
		{linkLocal, "100.100.100.200:80", true},
		{linkLocal, "[fd00:ec2::254]:80", true},
		{linkLocal, "[fd00::1]:80", false},

		// Allowed transition prefixes still refuse what they embed.
		{transition, "[64:ff9b::808:808]:80", false},
		{transition, "[64:ff9b::7f00:1]:80", true},
		{transition, "[64:ff9b::a9fe:a9fe]:80", true}, // 169.254.169.254
		{transition, "[64:ff9b::a00:1]:80", true},     // 10.0.0.1
		{transition, "[64:ff9b:1::7f00:1]:80", true},
		{transition, "[64:ff9b:1:2::808:808]:80", false},
		{transition, "[2002:808:808::1]:80", false},
		{transition, "[2002:7f00:1::1]:80", true},
		{transition, "[2002:c0a8:101::1]:80", true},           // 192.168.1.1
		{transition, "[2001:0:808:808::f7f7:fbfb]:80", false}, // server 8.8.8.8, client 8.8.4.4
		{transition, "[2001:0:808:808::80ff:fffe]:80", true},  // client 127.0.0.1
		{transition, "[2001:0:a00:1::f7f7:fbfb]:80", true},    // server 10.0.0.1
		{transition, "[::808:808]:80", false},
		{transition, "[::7f00:1]:80", true},
		{transition, "[::ffff:0:7f00:1]:80", true},
		{transition, "[::1]:80", true},

		// Loopback only through the allow setting, and only what it lists.
		{loopback, "127.0.0.1:80", false},
		{loopback, "[::1]:80", true},
		{[]netip.Prefix{netip.MustParsePrefix("::1/128")}, "[::1]:80", false},
		{[]netip.Prefix{netip.MustParsePrefix("::1/128")}, "[::]:80", true},
		{[]netip.Prefix{netip.MustParsePrefix("::1/128")}, "[::2]:80", true},
		{loopback, "10.0.0.1:80", true},
		{loopback, "[64:ff9b::7f00:1]:80", true},
	}
	for _, tc := range cases {
		network := "tcp4"
		if strings.HasPrefix(tc.address, "[") {
			network = "tcp6"
		}
		err := gateway.NewDialer(tc.allow).Control(network, tc.address, nil)
		if tc.blocked {
			require.True(t, gateway.IsBlocked(err), "%s (allow %v): %v", tc.address, tc.allow, err)
		} else {
			require.NoError(t, err, "%s (allow %v)", tc.address, tc.allow)
		}
	}
}

// DNS rebinding: a name whose resolver answers a public address first and
// loopback second. The dialer tries each address in turn, and the guard
// checks each at connect time, so the loopback one is refused even though
// the name also resolved to an allowed address.
func TestRebindingNameIsRefusedAtConnectTime(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, "127.0.0.1:0", ok)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	public := netip.MustParseAddr("93.184.216.34")
	dns := newDNSStub(t, public, netip.MustParseAddr("127.0.0.1"))

	d := gateway.NewDialer(nil)
	d.Resolver = dns.resolver()
	guard := d.Control
	var mu sync.Mutex
	verdicts := map[string]error{}
	d.Control = func(network, address string, c syscall.RawConn) error {
		err := guard(network, address, c)
		mu.Lock()
		verdicts[address] = err
		mu.Unlock()
		if err == nil && strings.HasPrefix(address, public.String()+":") {
			// The public address lets the guard pass but does not answer
			// (an attacker's choice), so the dialer moves on to the next one.
			return errors.New("test: public address unreachable")
		}
		return err
	}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	res, err := c.Get("http://rebind.example.test.:" + port + "/")
	if res != nil {
		res.Body.Close()
	}
	require.Error(t, err)
	require.Zero(t, hits.Load(), "the loopback receiver must never be reached")
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, verdicts, public.String()+":"+port, "the public address was tried: %v", verdicts)
	require.NoError(t, verdicts[public.String()+":"+port])
	require.True(t, gateway.IsBlocked(verdicts["127.0.0.1:"+port]), "the loopback answer is refused by the guard: %v", verdicts)
}

func TestCredentialedRequestsAreNotRedirected(t *testing.T) {
	t.Parallel()
	target, targetHits := countingServer(t, "127.0.0.1:0", ok)
	front, _ := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	c := gateway.NewClient(loopback, 5*time.Second)
	for _, h := range []string{"Authorization", "Cookie"} {
		req, err := http.NewRequest("GET", front.URL, nil)
		require.NoError(t, err)
		req.Header.Set(h, "secret")
		res, err := c.Do(req)
		if res != nil {
			res.Body.Close()
		}
		require.Error(t, err, h)
	}
	require.Zero(t, targetHits.Load(), "credentials never follow a redirect")
	res, err := c.Get(front.URL)
	require.NoError(t, err)
	res.Body.Close()
	require.EqualValues(t, 1, targetHits.Load(), "a request without credentials is redirected")
}

// TestCheckAddrAppliesTheDialersPolicy checks, without dialing, the
// addresses the dialer refuses, and lets through the public ones and what
// the allow list names (but never a metadata address).
func TestCheckAddrAppliesTheDialersPolicy(t *testing.T) {
	t.Parallel()
	for addr, allowed := range map[string]bool{
		"127.0.0.1": false, "10.1.2.3": false, "169.254.169.254": false, "::1": false, "::ffff:10.0.0.1": false,
		"fd00:ec2::254": false, "1.1.1.1": true, "2606:4700::1111": true,
	} {
		err := gateway.CheckAddr(netip.MustParseAddr(addr), nil)
		require.Equal(t, allowed, err == nil, "%s: %v", addr, err)
		if err != nil {
			require.True(t, gateway.IsBlocked(err), "%s: %v", addr, err)
		}
	}
	require.NoError(t, gateway.CheckAddr(netip.MustParseAddr("127.0.0.1"), loopback))
	require.Error(t, gateway.CheckAddr(netip.MustParseAddr("10.0.0.1"), loopback))
	metadata := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}
	require.NoError(t, gateway.CheckAddr(netip.MustParseAddr("169.254.10.1"), metadata))
	require.Error(t, gateway.CheckAddr(netip.MustParseAddr("169.254.169.254"), metadata), "metadata stays refused inside an allowed prefix")
}
