package web

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
)

// Request bodies. The servers stream request bodies (fasthttp's
// StreamRequestBody): before any handler runs, the server has read a
// request's line, its headers and at most the first bodyPrefetchBytes of its
// body; the rest waits in the connection until ReadBody reads it. So a
// route that authenticates its caller reads the body only once the caller is
// known, and an anonymous flood of large bodies costs a few kilobytes per
// connection, not the bodies.

// DefaultMaxBodyBytes caps the body of every route that allows no more: the
// admin and agent APIs' JSON, the console's forms.
const DefaultMaxBodyBytes = 64 << 10

// MaxBodyBytesInFlight bounds the bytes of request bodies one app reads at
// once beyond what the server has already read with the headers: a body
// that does not fit is refused with a 503 before it is read.
const MaxBodyBytesInFlight = 32 << 20

// ReadTimeout is how long a request's line, headers and a body of up to
// bodyPrefetchBytes may take to arrive.
const ReadTimeout = 10 * time.Second

// MinBodyBytesPerSecond is the slowest a body ReadBody accepts may arrive:
// a larger body gets ReadTimeout plus a second per this many bytes.
const MinBodyBytesPerSecond = 64 << 10

// bodyPrefetchBytes is how much of a body fasthttp reads with the headers
// when it streams bodies (readBodyWithStreaming's 8 KiB): a body this small
// is in memory before any handler runs, and ReadBody takes it as it is.
const bodyPrefetchBytes = 8 << 10

// bodyPolicyKey is the Locals key of the request's *bodyPolicy.
const bodyPolicyKey = "web.body"

// bodyHeldKey is the Locals key of the bytes ReadBody took from the budget.
const bodyHeldKey = "web.body.held"

// bodyPolicy is how one app takes request bodies.
type bodyPolicy struct {
	limitFunc func(c *fiber.Ctx) int
	afterAuth bool
	budget    *limit.ByteBudget
}

// limitOf is the most bytes the request's route accepts.
func (p *bodyPolicy) limitOf(c *fiber.Ctx) int {
	if p.limitFunc == nil {
		return DefaultMaxBodyBytes
	}
	return p.limitFunc(c)
}

// gate runs first on every request. It refuses compressed bodies and bodies
// announced larger than the route accepts before anything is read, reads
// the body at once unless the app reads bodies after authentication, and
// after the handlers closes a connection whose body nobody read, so that its
// unread bytes are never taken for the next request.
func (p *bodyPolicy) gate(c *fiber.Ctx) error {
	c.Locals(bodyPolicyKey, p)
	req := c.Request()
	n := req.Header.ContentLength()
	err := p.admit(c, n)
	if err == nil {
		err = c.Next()
	}
	if n > bodyPrefetchBytes || n == -1 { // -1: chunked
		if held, ok := c.Locals(bodyHeldKey).(int64); ok {
			p.budget.Give(held)
		}
		if req.IsBodyStream() {
			c.Context().SetConnectionClose()
		}
	}
	return err
}

// admit checks what can be checked before reading, and reads the body now
// when the app does not wait for authentication.
func (p *bodyPolicy) admit(c *fiber.Ctx, n int) error {
	if err := refuseEncodedBodies(c); err != nil {
		return err
	}
	if max := p.limitOf(c); n > max {
		return tooLarge(max)
	}
	if p.afterAuth {
		return nil
	}
	return ReadBody(c)
}

// ReadBody reads the request's body, at most the route's limit, so that
// Ctx.Body and Request.Body return it. A route of an app that reads bodies
// after authentication (Options.BodyAfterAuth) calls it once the caller is
// known; calling it again does nothing. A body over the limit is a 413, one
// that does not fit in the app's budget a 503, one that stops arriving a
// 400; the connection is then closed, its unread bytes with it.
func ReadBody(c *fiber.Ctx) error {
	req := c.Request()
	if !req.IsBodyStream() {
		return nil // no body, or read already
	}
	p, _ := c.Locals(bodyPolicyKey).(*bodyPolicy)
	if p == nil {
		return errors.New("web: ReadBody on an app not built by NewApp")
	}
	n := req.Header.ContentLength()
	if n >= 0 && n <= bodyPrefetchBytes {
		req.Body() // already in memory: the server moves it into the body buffer
		return nil
	}
	max := p.limitOf(c)
	if n > max {
		return tooLarge(max)
	}
	want := int64(n)
	if n < 0 { // chunked: the length is known only at the end
		want = int64(max)
	}
	if !p.budget.Take(want) {
		e := apperr.New(apperr.Unavailable, "the server is receiving too many large requests; retry")
		e.RetryAfter = time.Second
		return e
	}
	c.Locals(bodyHeldKey, want)
	if conn := c.Context().Conn(); conn != nil {
		_ = conn.SetReadDeadline(time.Now().Add(ReadTimeout + time.Duration(want/MinBodyBytesPerSecond)*time.Second))
	}
	body, err := readStream(req.BodyStream(), n, max)
	if err != nil {
		return err
	}
	req.SetBodyRaw(body)
	return nil
}

// readStream reads a body of length n (-1: chunked, read up to max + 1 to
// tell an over-long one).
func readStream(stream io.Reader, n, max int) ([]byte, error) {
	if n >= 0 {
		body := make([]byte, n)
		if _, err := io.ReadFull(stream, body); err != nil {
			return nil, bodyCutShort(err)
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(stream, int64(max)+1))
	if err != nil {
		return nil, bodyCutShort(err)
	}
	if len(body) > max {
		return nil, tooLarge(max)
	}
	return body, nil
}

func tooLarge(max int) error {
	return apperr.New(apperr.TooLarge, "request body is over the %s cap", sizeName(max))
}

func bodyCutShort(err error) error {
	return apperr.Wrap(err, apperr.Invalid, "the request body ended early or arrived too slowly")
}

// sizeName writes a byte count the way the caps are documented: "256 KiB", "4 MiB".
func sizeName(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}

// refuseEncodedBodies answers 400 for a request whose body is sent with a
// Content-Encoding. Fiber's Ctx.Body inflates gzip, deflate and br bodies
// (nested ones too) with no bound, so a few kilobytes of compressed zeros
// would cost gigabytes and seconds of CPU before any token or size cap is
// checked. No client of ours compresses what it sends.
func refuseEncodedBodies(c *fiber.Ctx) error {
	var encoded string
	// PeekAll sees every Content-Encoding line, not only the first; it does
	// not allocate, unlike visiting every header.
	for _, value := range c.Request().Header.PeekAll(fiber.HeaderContentEncoding) {
		for _, coding := range strings.Split(string(value), ",") {
			if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				encoded = coding
			}
		}
	}
	if encoded != "" {
		return apperr.Invalidf("Content-Encoding %s is not accepted: send the request body uncompressed", encoded)
	}
	return nil
}
