package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/gateway"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

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

func TestLoopbackRefusedByDefault(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, "127.0.0.1:0", ok)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := gateway.NewClient(nil, 5*time.Second)
	for _, url := range []string{srv.URL, "http://localhost:" + port + "/"} {
		res, err := c.Get(url)
		if res != nil {
			res.Body.Close()
		}
		require.Error(t, err, url)
		require.True(t, gateway.IsBlocked(err), "%s: %v", url, err)
	}
	require.Zero(t, hits.Load(), "the receiver must never be reached")
}

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
