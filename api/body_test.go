package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// TestNoRouteReadsABodyBeforeAuthenticating sends every API route that
// takes a body 1 MiB, chunked, without a token: each answers 401 (or 404
// when no route matches) having read the headers and a few kilobytes, and
// closes the connection with the rest unread.
func TestNoRouteReadsABodyBeforeAuthenticating(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	app := api.New(a.P.APIServices())
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	counted := testkit.CountReads(ln)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, app, counted, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })

	tried := 0
	for _, route := range app.GetRoutes(true) {
		if route.Method != "POST" && route.Method != "PUT" && route.Method != "PATCH" {
			continue
		}
		tried++
		path := route.Path
		for _, p := range route.Params {
			path = strings.Replace(path, ":"+p, models.NewID(), 1)
		}
		before := counted.Read()
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", route.Method, path)
		require.NoError(t, err)
		go func() {
			chunk := strings.Repeat("x", 32<<10)
			for range 32 {
				if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return
				}
			}
		}()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "%s %s", route.Method, route.Path)
		_, _ = io.ReadAll(res.Body)
		res.Body.Close()
		conn.Close()
		require.Equal(t, 401, res.StatusCode, "%s %s", route.Method, route.Path)
		require.True(t, res.Close, "%s %s closes the connection with the body unread", route.Method, route.Path)
		require.Less(t, counted.Read()-before, int64(64<<10), "%s %s read the anonymous body", route.Method, route.Path)
	}
	require.Greater(t, tried, 20, "every route that takes a body was tried")
}

// TestRuntimeVerbsTakeOnlyJSON: a verb's body must be declared
// application/json, in either envelope, before anything else is looked at.
func TestRuntimeVerbsTakeOnlyJSON(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	body := map[string]any{"op": "list_invoices"}
	for _, tc := range []struct {
		contentType string
		status      int
	}{
		{"", 415},
		{"text/plain", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=x", 415},
		{"application/jsonp", 415},
		{"application/json", 200},
		{"application/json; charset=utf-8", 200},
		{"Application/JSON", 200},
	} {
		for _, v2 := range []bool{false, true} {
			headers := []string{"Content-Type", tc.contentType}
			if v2 {
				headers = append(headers, "X-Nanonets-App-Runtime", "v2")
			}
			r := f.verb(t, "read", body, headers...)
			require.Equal(t, tc.status, r.Status, "%q v2=%v: %s", tc.contentType, v2, r.Raw)
			if tc.status == 415 {
				require.Equal(t, "Content-Type must be application/json", errorMessage(t, r, v2))
			}
		}
	}
	r := f.api.call(t, "POST", "/api/app-runtime/write", "", body, "Content-Type", "text/plain")
	require.Equal(t, 415, r.Status, "the media type is checked before the token: %s", r.Raw)
}

// TestRepliesAreNeverCached: every API reply (tokens, secrets, live data,
// errors) says no-store and nosniff; only a bundle version's immutable URL
// may be cached.
func TestRepliesAreNeverCached(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	bundle := f.api.call(t, "POST", "/api/admin/bundles?name=cached", f.tenant.AdminToken, "<p>x</p>", "Content-Type", "text/html")
	require.Equal(t, 201, bundle.Status, string(bundle.Raw))
	for _, tc := range []struct {
		name         string
		method, path string
		token        string
		body         any
		status       int
		cacheControl string
	}{
		{"a minted session token", "POST", "/api/app-tools/sessions", f.tenant.HostToken, map[string]string{"step_id": f.stepID}, 201, "no-store"},
		{"an issued token", "POST", "/api/admin/tokens", f.tenant.AdminToken, map[string]string{"scope": "admin"}, 201, "no-store"},
		{"a read", "POST", "/api/app-runtime/read", f.token, map[string]string{"op": "list_invoices"}, 200, "no-store"},
		{"a refusal", "GET", "/api/admin/tokens", "", nil, 401, "no-store"},
		{"no such route", "GET", "/api/nothing", "", nil, 404, "no-store"},
		{"a bundle version", "GET", "/bundles/" + bundle.Body["id"].(string) + "/1", "", nil, 200, "public, max-age=31536000, immutable"},
		{"no such bundle", "GET", "/bundles/" + models.NewID() + "/1", "", nil, 404, "no-store"},
	} {
		r := f.api.call(t, tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, tc.cacheControl, r.Header.Get("Cache-Control"), tc.name)
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"), tc.name)
	}
}
