package web_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/web"
)

func newApp(t *testing.T, logs *bytes.Buffer) *fiber.App {
	t.Helper()
	app := web.NewApp(web.Options{Name: "test", Logger: logging.New(logs, slog.LevelDebug)})
	app.Get("/invalid", func(c *fiber.Ctx) error { return apperr.Invalidf("field x is bad") })
	app.Get("/limited", func(c *fiber.Ctx) error {
		return apperr.RateLimitedAfter(1500*time.Millisecond, "slow down")
	})
	app.Get("/boom", func(c *fiber.Ctx) error { return errors.New("db password=hunter2 leaked") })
	app.Get("/panic", func(c *fiber.Ctx) error { panic("kaboom") })
	app.Post("/echo", func(c *fiber.Ctx) error { return c.Send(c.Body()) })
	return app
}

func do(t *testing.T, app *fiber.App, req *http.Request) (int, http.Header, map[string]any) {
	t.Helper()
	res, err := app.Test(req, 5000)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	return res.StatusCode, res.Header, body
}

func TestErrorShapesV1AndV2(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	app := newApp(t, &logs)

	cases := []struct {
		path    string
		status  int
		message string
	}{
		{"/invalid", 400, "field x is bad"},
		{"/limited", 429, "slow down"},
		{"/boom", 500, "internal error"},
		{"/panic", 500, "internal error"},
		{"/nope", 404, "no such route"},
	}
	for _, tc := range cases {
		status, _, body := do(t, app, httptest.NewRequest("GET", tc.path, nil))
		require.Equal(t, tc.status, status, tc.path)
		require.Equal(t, map[string]any{"error": tc.message}, body, tc.path)

		req := httptest.NewRequest("GET", tc.path, nil)
		req.Header.Set(web.V2Header, "v2")
		status, _, body = do(t, app, req)
		require.Equal(t, tc.status, status, tc.path)
		require.Equal(t, map[string]any{"ok": false, "error": map[string]any{"status": float64(tc.status), "message": tc.message}}, body, tc.path)
	}
	require.Contains(t, logs.String(), "hunter2", "internal detail is logged")
	require.Contains(t, logs.String(), "kaboom")
}

func TestRetryAfterIsWholeSecondsAtLeastOne(t *testing.T) {
	t.Parallel()
	app := newApp(t, &bytes.Buffer{})
	_, h, _ := do(t, app, httptest.NewRequest("GET", "/limited", nil))
	require.Equal(t, "2", h.Get("Retry-After"))
}

func TestRequestIDOnResponseAndEveryLogLine(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	app := newApp(t, &logs)
	req := httptest.NewRequest("GET", "/boom", nil)
	req.Header.Set("X-Request-Id", "req-abc.123")
	_, h, _ := do(t, app, req)
	require.Equal(t, "req-abc.123", h.Get("X-Request-Id"))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2, "an error line and an access line")
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		require.Equal(t, "req-abc.123", rec["request_id"], l)
	}

	req = httptest.NewRequest("GET", "/invalid", nil)
	req.Header.Set("X-Request-Id", "bad id with spaces")
	_, h, _ = do(t, app, req)
	require.Regexp(t, `^[0-9a-f]{12}-[0-9]+$`, h.Get("X-Request-Id"), "an unsafe id is replaced by a generated one")
}

// serve runs app with web.Serve on a loopback port until the test ends and
// returns its address.
func serve(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, app, ln, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func TestBodyOverTheLimitIs413OnARealServer(t *testing.T) {
	t.Parallel()
	addr := serve(t, newApp(t, &bytes.Buffer{}))

	// A raw connection: the server answers 413 and closes while the client is
	// still sending, which net/http's client reports as a write error.
	for _, chunked := range []bool{false, true} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		header := fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", web.MaxUploadBytes+1)
		if chunked {
			header = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		}
		_, err = conn.Write([]byte(header))
		require.NoError(t, err)
		go func() {
			chunk := make([]byte, 64<<10)
			for sent := 0; sent <= web.MaxUploadBytes; sent += len(chunk) {
				if chunked {
					if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
						return
					}
				} else if _, err := conn.Write(chunk); err != nil {
					return
				}
			}
		}()
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		raw, _ := io.ReadAll(res.Body)
		conn.Close()
		require.Equal(t, 413, res.StatusCode, "chunked=%v: %s", chunked, raw)
	}
}

// A compressed request body would be inflated, without bound, by the first
// handler that reads it; a few kilobytes of gzip can hold gigabytes of zeros.
func TestCompressedBodiesAreRefusedBeforeAnyHandlerReadsThem(t *testing.T) {
	t.Parallel()
	app := newApp(t, &bytes.Buffer{})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(`{"op":"x"}`))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	for _, tc := range []struct {
		name     string
		encoding []string
		body     []byte
		status   int
	}{
		{"gzip", []string{"gzip"}, gz.Bytes(), 400},
		{"nested gzip", []string{"identity, gzip"}, gz.Bytes(), 400},
		{"deflate", []string{"Deflate"}, gz.Bytes(), 400},
		{"br", []string{"br"}, gz.Bytes(), 400},
		{"a second header", []string{"identity", "gzip"}, gz.Bytes(), 400},
		{"identity", []string{"identity"}, []byte(`{"op":"x"}`), 200},
		{"none", nil, []byte(`{"op":"x"}`), 200},
	} {
		req := httptest.NewRequest("POST", "/echo", bytes.NewReader(tc.body))
		for _, e := range tc.encoding {
			req.Header.Add("Content-Encoding", e)
		}
		res, err := app.Test(req, 5000)
		require.NoError(t, err)
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, tc.status, res.StatusCode, "%s: %s", tc.name, raw)
		if tc.status == 200 {
			require.Equal(t, `{"op":"x"}`, string(raw), tc.name)
		} else {
			require.Contains(t, string(raw), "is not accepted: send the request body uncompressed", tc.name)
		}
	}
}

// TestARequestContextKeepsItsIDAfterTheRequest: the server reuses a
// connection's header buffers for its next request; work that outlives a
// request (and logs with its context) must still see that request's id.
func TestARequestContextKeepsItsIDAfterTheRequest(t *testing.T) {
	t.Parallel()
	app := newApp(t, &bytes.Buffer{})
	contexts := make(chan context.Context, 2)
	app.Get("/capture", func(c *fiber.Ctx) error {
		contexts <- c.UserContext()
		return c.SendString("ok")
	})
	addr := serve(t, app)

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	replies := bufio.NewReader(conn)
	ids := []string{"first-request-0001", "other-request-0002"}
	for _, id := range ids { // one keep-alive connection
		_, err := fmt.Fprintf(conn, "GET /capture HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n\r\n", id)
		require.NoError(t, err)
		res, err := http.ReadResponse(replies, nil)
		require.NoError(t, err)
		_, _ = io.ReadAll(res.Body)
		require.NoError(t, res.Body.Close())
		require.Equal(t, id, res.Header.Get("X-Request-Id"))
	}
	for _, id := range ids {
		require.Equal(t, id, logging.RequestIDOf(<-contexts))
	}
}

// A stop that arrives before the server has taken its listener (a SIGTERM
// right after start) still ends Serve: nothing is left serving forever.
func TestServeStopsWhenCancelledBeforeItStarted(t *testing.T) {
	t.Parallel()
	for i := 0; i < 20; i++ {
		ln, err := web.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() {
			done <- web.Serve(ctx, web.NewApp(web.Options{Name: "t", Logger: slog.New(slog.DiscardHandler)}), ln, time.Second)
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after its context ended")
		}
		_, err = net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		require.Error(t, err, "nothing listens after Serve returned")
	}
}

// A request still running when the drain is over sees its context end, so
// the work it started on the caller's behalf stops instead of outliving the
// process; a request that finishes within the drain is answered normally.
func TestShutdownEndsTheContextOfRequestsStillRunningAfterTheDrain(t *testing.T) {
	t.Parallel()
	app := newApp(t, &bytes.Buffer{})
	entered := make(chan struct{})
	ended := make(chan error, 1)
	app.Get("/wait", func(c *fiber.Ctx) error {
		close(entered)
		select {
		case <-c.UserContext().Done():
			ended <- c.UserContext().Err()
		case <-time.After(10 * time.Second):
			ended <- errors.New("the request's context outlived the shutdown")
		}
		return c.SendString("ok")
	})
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, app, ln, 200*time.Millisecond) }()
	go func() {
		res, err := http.Get("http://" + ln.Addr().String() + "/wait")
		if err == nil {
			_ = res.Body.Close()
		}
	}()
	<-entered
	cancel()
	require.ErrorIs(t, <-ended, context.Canceled)
	<-done
}

// TestAnAnswerGivenBeforeTheBodyReachesAnHTTPClient: the server answers a
// body over the cap with 413 without reading it and closes the connection;
// a plain HTTP client still sending must read that 413, not a reset (which
// a close with the client's bytes unread would send).
func TestAnAnswerGivenBeforeTheBodyReachesAnHTTPClient(t *testing.T) {
	t.Parallel()
	addr := serve(t, newApp(t, &bytes.Buffer{}))

	body := bytes.Repeat([]byte("x"), 2<<20)
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 20 {
		for _, chunked := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(body)
			if chunked {
				r = io.MultiReader(r) // no length known: sent chunked
			}
			res, err := client.Post("http://"+addr+"/echo", "application/octet-stream", r)
			require.NoError(t, err, "attempt %d, chunked=%v", i, chunked)
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			require.Equal(t, 413, res.StatusCode, "attempt %d, chunked=%v", i, chunked)
		}
	}
}

// A connection a client opened and never used (a browser's spare socket,
// Go's transport dialing in the background) is closed without an answer
// once ReadTimeout passes: an error written to it would be taken by the
// client as the answer to the next request it sends there.
func TestAnUnusedConnectionClosesWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	addr := serve(t, newApp(t, &bytes.Buffer{}))

	for name, sent := range map[string]string{"nothing": "", "half a request line": "GET /invalid HT"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, sent)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(web.ReadTimeout+5*time.Second)))
			got, err := io.ReadAll(conn)
			require.NoError(t, err, "the server closes the connection after ReadTimeout")
			require.Empty(t, string(got))
		})
	}
}
