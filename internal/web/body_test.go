package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
)

// authApp is an app that reads bodies after authentication, as the API
// does: POST /upload takes up to web.MaxUploadBytes from a caller bearing
// "Authorization: Bearer good", everything else the default cap.
func authApp(t *testing.T) (addr string, counted *testkit.ReadCounter) {
	t.Helper()
	app := web.NewApp(web.Options{
		Name: "test", Logger: logging.New(io.Discard, slog.LevelError), BodyAfterAuth: true,
		BodyLimitFunc: func(c *fiber.Ctx) int {
			if c.Path() == "/upload" {
				return web.MaxUploadBytes
			}
			return web.DefaultMaxBodyBytes
		},
		Headers: [][2]string{{"Cache-Control", "no-store"}},
	})
	auth := func(c *fiber.Ctx) error {
		if c.Get("Authorization") != "Bearer good" {
			return apperr.Unauthenticatedf("a token is required")
		}
		if err := web.ReadBody(c); err != nil {
			return err
		}
		return c.Next()
	}
	echoLength := func(c *fiber.Ctx) error { return c.SendString(fmt.Sprint(len(c.Body()))) }
	app.Post("/upload", auth, echoLength)
	app.Post("/small", auth, echoLength)
	app.Post("/open", echoLength) // a route that forgot to authenticate
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	counted = testkit.CountReads(ln)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, app, counted, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), counted
}

// send writes a request with a body of size bytes (chunked when asked) on
// a fresh connection, without waiting for the server to read it, and
// returns the reply.
func send(t *testing.T, addr, path, token string, size int, chunked bool, headers ...string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	header := "POST " + path + " HTTP/1.1\r\nHost: x\r\n"
	if token != "" {
		header += "Authorization: Bearer " + token + "\r\n"
	}
	for _, h := range headers {
		header += h + "\r\n"
	}
	if chunked {
		header += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		header += fmt.Sprintf("Content-Length: %d\r\n\r\n", size)
	}
	_, err = conn.Write([]byte(header))
	require.NoError(t, err)
	go func() {
		chunk := bytes.Repeat([]byte("a"), 32<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			part := chunk[:min(len(chunk), size-sent)]
			if chunked {
				if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(part), part); err != nil {
					return
				}
			} else if _, err := conn.Write(part); err != nil {
				return
			}
		}
		if chunked {
			_, _ = conn.Write([]byte("0\r\n\r\n"))
		}
	}()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(raw)
}

// TestAnAnonymousBodyIsNeverRead: 4 MiB sent without a token cost the
// server the headers and a few kilobytes, not the body; the same upload
// with a token is read whole.
func TestAnAnonymousBodyIsNeverRead(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	for _, tc := range []struct {
		name    string
		chunked bool
		headers []string
	}{
		{"with a length", false, nil},
		{"chunked", true, nil},
		// fasthttp parses a multipart body before any handler unless told not to.
		{"multipart", false, []string{"Content-Type: multipart/form-data; boundary=x"}},
	} {
		chunked := tc.chunked
		addr, read := authApp(t)
		res, body := send(t, addr, "/upload", "", size, chunked, tc.headers...)
		require.Equal(t, 401, res.StatusCode, body)
		require.True(t, res.Close, "the connection is closed with the unread body in it")
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"), "the app's headers are on every reply")
		time.Sleep(100 * time.Millisecond) // let the server's reads settle
		require.Less(t, read.Read(), int64(64<<10), "%s: the server read %d bytes of an anonymous 4 MiB upload", tc.name, read.Read())

		res, body = send(t, addr, "/upload", "good", size, chunked, tc.headers...)
		require.Equal(t, 200, res.StatusCode, body)
		require.Equal(t, fmt.Sprint(size), body, tc.name)
	}
}

func TestBodyCapsPerRoute(t *testing.T) {
	t.Parallel()
	addr, _ := authApp(t)
	for _, tc := range []struct {
		name, path string
		size       int
		chunked    bool
		status     int
		reply      string
	}{
		{"small route at its cap", "/small", web.DefaultMaxBodyBytes, false, 200, fmt.Sprint(web.DefaultMaxBodyBytes)},
		{"small route over its cap", "/small", web.DefaultMaxBodyBytes + 1, false, 413, "request body is over the 64 KiB cap"},
		{"small route over its cap, chunked", "/small", web.DefaultMaxBodyBytes + 1, true, 413, "request body is over the 64 KiB cap"},
		{"upload over its cap", "/upload", web.MaxUploadBytes + 1, false, 413, "request body is over the 4160 KiB cap"},
		{"upload over its cap, chunked", "/upload", web.MaxUploadBytes + 1, true, 413, "request body is over the 4160 KiB cap"},
		{"a route that forgot to authenticate keeps the cap", "/open", web.DefaultMaxBodyBytes + 1, false, 413, "request body is over the 64 KiB cap"},
	} {
		res, body := send(t, addr, tc.path, "good", tc.size, tc.chunked)
		require.Equal(t, tc.status, res.StatusCode, "%s: %s", tc.name, body)
		require.Contains(t, body, tc.reply, tc.name)
	}
}

// TestBodiesBeyondTheBudgetAre503Quickly: uploads whose bodies are still
// arriving hold the app's body budget; one more is refused at once with a
// 503 and Retry-After, without its body. Of fit+1 such uploads (however the
// server orders them) exactly one is refused, and none is answered
// otherwise: the others wait for bodies that never come.
func TestBodiesBeyondTheBudgetAre503Quickly(t *testing.T) {
	t.Parallel()
	addr, _ := authApp(t)
	fit := web.MaxBodyBytesInFlight / web.MaxUploadBytes
	type reply struct {
		res *http.Response
		err error
	}
	replies := make(chan reply, fit+1)
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range fit + 1 {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, conn)
		// A full upload announced, a little of it sent: the server takes the
		// whole announced length from the budget and waits for the rest.
		_, err = fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: %d\r\n\r\n%s",
			web.MaxUploadBytes, strings.Repeat("a", 16<<10))
		require.NoError(t, err)
		go func() {
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				_, _ = io.ReadAll(res.Body)
				res.Body.Close()
			}
			replies <- reply{res, err}
		}()
	}
	var first reply
	select {
	case first = <-replies:
	case <-time.After(30 * time.Second):
		t.Fatal("no upload was refused")
	}
	require.NoError(t, first.err)
	require.Equal(t, 503, first.res.StatusCode)
	require.Equal(t, "1", first.res.Header.Get("Retry-After"))
	require.True(t, first.res.Close, "its unread body goes with its connection")
	select {
	case other := <-replies:
		t.Fatalf("a second upload was answered: %v %v", other.res, other.err)
	case <-time.After(500 * time.Millisecond):
	}

	res, body := send(t, addr, "/small", "good", 100, false)
	require.Equal(t, 200, res.StatusCode, "a small body needs no budget: %s", body)
}

// TestKeepAliveSurvivesSmallBodies: bodies the server read with the headers
// leave the connection usable, whether or not a handler read them.
func TestKeepAliveSurvivesSmallBodies(t *testing.T) {
	t.Parallel()
	addr, _ := authApp(t)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	replies := bufio.NewReader(conn)
	for i, tc := range []struct {
		token  string
		status int
	}{{"", 401}, {"good", 200}, {"bad", 401}, {"good", 200}} {
		_, err := fmt.Fprintf(conn, "POST /small HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 5\r\n\r\nhello", tc.token)
		require.NoError(t, err)
		res, err := http.ReadResponse(replies, nil)
		require.NoError(t, err, "request %d", i)
		_, _ = io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, tc.status, res.StatusCode, "request %d", i)
		require.False(t, res.Close, "request %d keeps the connection", i)
	}
}
