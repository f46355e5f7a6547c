package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/tracing"
)

// MaxUploadBytes is the largest request body any route reads: an
// authenticated bundle upload. Seed 004 caps a bundle asset at 4 MiB, and an
// upload carries a little framing beside it. Other routes take far less
// (DefaultMaxBodyBytes, runtime.MaxBodyBytes).
const MaxUploadBytes = 4<<20 + 64<<10

// Options configure an app.
type Options struct {
	Name         string // "api" or "console", for logs
	Logger       *slog.Logger
	ErrorHandler fiber.ErrorHandler // nil: JSON errors (RenderError)
	// Immutable makes every string Fiber hands out (headers, params, the
	// body) a copy. Without it they alias a buffer that the connection's next
	// request overwrites, so a value kept past its handler (a cache key, a
	// context value) silently changes: such a value must be copied
	// (strings.Clone) where it is kept. The console sets it; the API keeps
	// the copies off its hot path and copies the few values it keeps.
	Immutable bool
	// BodyLimitFunc returns the most bytes a request's body may have, from
	// its method and path; nil: DefaultMaxBodyBytes for every route.
	BodyLimitFunc func(c *fiber.Ctx) int
	// BodyAfterAuth makes the routes read their bodies themselves, through
	// ReadBody once they have authenticated the caller; nothing reads a body
	// before. Without it every body is read before the routes run.
	BodyAfterAuth bool
	// Headers are set on every response before any handler runs (a handler
	// may replace one).
	Headers [][2]string
	// Observe, when set, runs right after the request context is set up and
	// before the body gate, so it sees every request and the status it ends
	// with, a refused body's included (the metrics middleware).
	Observe fiber.Handler
	// Proxies are the hops whose X-Forwarded-For names the client in the
	// access log (TRUSTED_PROXIES); none by default.
	Proxies Proxies
}

// NewApp returns a Fiber app with request ids, panic recovery, access logs and
// the error renderer installed.
func NewApp(o Options) *fiber.App {
	eh := o.ErrorHandler
	if eh == nil {
		eh = JSONErrorHandler(o.Logger)
	}
	app := fiber.New(fiber.Config{
		AppName:               "appruntime " + o.Name,
		DisableStartupMessage: true,
		BodyLimit:             MaxUploadBytes,
		// Bodies are read by the gate or by ReadBody, after the checks that
		// need only the headers (body.go).
		StreamRequestBody: true,
		// Left on, fasthttp would read a multipart body (spilling its files
		// to temporary files) before any handler could refuse it.
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  ReadTimeout,
		IdleTimeout:                  120 * time.Second,
		ErrorHandler:                 eh,
		Immutable:                    o.Immutable,
		// goccy/go-json encodes the same JSON as encoding/json, faster and
		// with less garbage; replies are on every hot path. They are JSON
		// documents, never embedded in HTML, so <, > and & need no escaping,
		// and map keys need no sorting.
		JSONEncoder: encodeJSON,
	})
	silenceReadTimeouts(app.Server())
	bodies := &bodyPolicy{limitFunc: o.BodyLimitFunc, afterAuth: o.BodyAfterAuth, budget: limit.NewByteBudget(MaxBodyBytesInFlight)}
	// lifetime is the parent of every request's context: it ends when the
	// app's shutdown returns (Fiber runs OnShutdown hooks once the drain is
	// over or timed out), so requests still running then see their context
	// canceled. Deriving values from it costs no goroutine per request.
	lifetime, stop := context.WithCancel(context.Background())
	app.Hooks().OnShutdown(func() error { stop(); return nil })
	app.Use(requestContext(lifetime, o.Logger, o.Headers, o.Proxies))
	if o.Observe != nil {
		app.Use(o.Observe)
	}
	app.Use(bodies.gate)
	return app
}

// silenceReadTimeouts closes a connection whose request did not arrive in
// ReadTimeout without answering it, as net/http does. fasthttp answers a
// connection's first request that never came with an error (its later ones
// close quietly), and a client that opened the connection ahead of need and
// left it unused (a browser's spare socket, Go's transport dialing in the
// background) may send its next request just as that answer arrives and take
// the answer for its own: "Request Timeout" for a page, an asset or a
// runtime call that was never read. A write deadline in the past makes
// fasthttp's answer fail before a byte of it is sent; it then closes the
// connection as it would have.
func silenceReadTimeouts(srv *fasthttp.Server) {
	answer := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			_ = ctx.Conn().SetWriteDeadline(time.Now())
			return
		}
		answer(ctx, err)
	}
}

func encodeJSON(v any) ([]byte, error) {
	return gojson.MarshalWithOption(v, gojson.DisableHTMLEscape(), gojson.UnorderedMap())
}

// Request ids are a random per-process prefix and a counter: unique across
// replicas and restarts without a random read (a syscall) per request.
var (
	requestIDPrefix = func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:]) + "-"
	}()
	requestCounter atomic.Uint64
)

// newRequestID builds the id in a buffer on the stack, so that the string is
// its one allocation (a concatenation with strconv.FormatUint made two).
func newRequestID() string {
	var b [40]byte // the prefix's 13 bytes and a uint64's 20 digits at most
	return string(strconv.AppendUint(append(b[:0], requestIDPrefix...), requestCounter.Add(1), 10))
}

// requestContext sets the app's headers, gives each request an id (the caller's X-Request-Id when it
// is sane), puts it in the request's context so that every log line of the
// request carries it, recovers panics, and writes one access-log line (its
// client is proxies.ClientAddr).
func requestContext(lifetime context.Context, log *slog.Logger, headers [][2]string, proxies Proxies) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		start := time.Now()
		for _, h := range headers {
			c.Set(h[0], h[1])
		}
		// The header's bytes are reused for the connection's next request; the
		// id lives on in the request's context, so it gets its own copy.
		id := strings.Clone(c.Get(fiber.HeaderXRequestID))
		if !requestid.Valid(id) {
			id = newRequestID()
		}
		c.Set(fiber.HeaderXRequestID, id)
		ctx := logging.With(lifetime, slog.String(logging.RequestID, id))
		var span oteltrace.Span
		if tracing.Enabled() {
			ctx, span = startRequestSpan(ctx, c)
		}
		c.SetUserContext(ctx)
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
				if herr := c.App().Config().ErrorHandler(c, err); herr != nil {
					_ = c.SendStatus(fiber.StatusInternalServerError)
				}
				err = nil
			}
			status := c.Response().StatusCode()
			if err != nil {
				// The error handler has not run yet; it renders after us.
				var fe *fiber.Error
				if errors.As(err, &fe) {
					status = fe.Code
				} else {
					_, status, _ = apperr.Public(err)
				}
			}
			if span != nil {
				endRequestSpan(span, c, status, err)
			}
			level := slog.LevelInfo
			if c.Path() == "/healthz" || c.Path() == "/readyz" {
				level = slog.LevelDebug
			}
			if log.Enabled(ctx, level) {
				log.Log(ctx, level, "request",
					"method", c.Method(), "path", c.Path(), "status", status, "client", proxies.ClientAddr(c).String(),
					"duration_ms", float64(time.Since(start).Microseconds())/1000)
			}
		}()
		return c.Next()
	}
}

// V2Header is the header a bundle sends to get the uniform v2 envelope.
const V2Header = "X-Nanonets-App-Runtime"

// WantsV2 reports whether the request asked for the v2 envelope.
func WantsV2(c *fiber.Ctx) bool { return c.Get(V2Header) == "v2" }

// UnavailableRetryAfter is the Retry-After (seconds) of a 503 whose error
// names no wait of its own: a dependency (Redis, the database) that did not
// answer.
const UnavailableRetryAfter = 2

// JSONErrorHandler renders errors as JSON: {"error": message} (plus any
// detail) in the v1 shape, {"ok":false,"error":{"status","message"}} in v2.
// Internal errors are logged with their detail and shown as a generic message.
func JSONErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		err = FromFiber(err)
		code, status, msg := apperr.Public(err)
		switch code {
		case apperr.Internal:
			log.ErrorContext(c.UserContext(), "request failed", "error", err.Error(), "path", c.Path())
		case apperr.BadGateway, apperr.Unavailable, apperr.Timeout:
			// The caller sees a short message; the cause (an upstream's or a
			// data source's own words) is for the operator.
			log.WarnContext(c.UserContext(), "upstream failed", "status", status, "error", err.Error(), "path", c.Path())
		}
		s := apperr.RetryAfterSeconds(err)
		if s == 0 && code == apperr.Unavailable {
			s = UnavailableRetryAfter // every 503 says when to come back
		}
		if s > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(s))
		}
		if WantsV2(c) {
			return c.Status(status).JSON(fiber.Map{"ok": false, "error": fiber.Map{"status": status, "message": msg}})
		}
		body := fiber.Map{"error": msg}
		for k, v := range apperr.DetailOf(err) {
			body[k] = v
		}
		return c.Status(status).JSON(body)
	}
}

// FromFiber turns the framework's own errors (unknown route, wrong method,
// body over the limit) into application errors with a readable message.
func FromFiber(err error) error {
	var fe *fiber.Error
	if !errors.As(err, &fe) {
		return err
	}
	code := apperr.CodeForStatus(fe.Code)
	switch fe.Code {
	case fiber.StatusNotFound:
		return apperr.NotFoundf("no such route")
	case fiber.StatusRequestEntityTooLarge:
		return apperr.New(apperr.TooLarge, "request body too large")
	case fiber.StatusMethodNotAllowed:
		return apperr.New(code, "method not allowed")
	}
	if fe.Code >= 500 {
		return fmt.Errorf("fiber: %w", err)
	}
	return apperr.New(code, "%s", fe.Message)
}

// Check is a readiness probe of one dependency.
type Check struct {
	Name string
	Func func(context.Context) error
}

// MountHealth adds /healthz (the process is alive) and /readyz (every check
// answers within two seconds) to app.
func MountHealth(app *fiber.App, log *slog.Logger, checks ...Check) {
	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})
	app.Get("/readyz", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		result := fiber.Map{}
		ready := true
		for _, ch := range checks {
			if err := ch.Func(ctx); err != nil {
				log.WarnContext(ctx, "readiness check failed", "check", ch.Name, "error", err.Error())
				result[ch.Name] = "unavailable"
				ready = false
				continue
			}
			result[ch.Name] = "ok"
		}
		status := fiber.StatusOK
		if !ready {
			status = fiber.StatusServiceUnavailable
		}
		return c.Status(status).JSON(fiber.Map{"ready": ready, "checks": result})
	})
}

// Listen opens a TCP listener on addr, so that callers learn of a taken port
// before anything else starts.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve runs app on ln until ctx is done, then stops accepting and waits up
// to drain for in-flight requests to finish. Connections close lingering
// (linger.go), so an answer given before a body was read reaches the client.
func Serve(ctx context.Context, app *fiber.App, ln net.Listener, drain time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(newLingerListener(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	err := app.ShutdownWithTimeout(drain)
	// A shutdown that comes before the server has taken ln finds nothing to
	// stop, and the server would then serve forever: closing ln ourselves
	// makes its accept loop end whenever it starts.
	_ = ln.Close()
	if serr := <-errc; err == nil && serr != nil && !errors.Is(serr, net.ErrClosed) {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
