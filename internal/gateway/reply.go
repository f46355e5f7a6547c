package gateway

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
)

// MaxReplyBytes caps an upstream reply after decompression (seed 000: 1 MiB).
// A larger reply is discarded, not truncated: half a JSON document cannot be
// parsed.
const MaxReplyBytes = 1 << 20

// ReplyTooLargeNote is the text a discarded reply is answered with, with
// the upstream's own status.
const ReplyTooLargeNote = "response exceeded 1 MiB"

// ErrReplyTooLarge is ReadCapped's error for a reply over MaxReplyBytes.
var ErrReplyTooLarge = errors.New("gateway: reply over MaxReplyBytes")

// reply reads res into a Response: JSON as body, anything else as text, a
// reply over MaxReplyBytes as ReplyTooLargeNote.
func (g *Gateway) reply(ctx context.Context, call *bindingspec.HTTPCall, res *http.Response) (Response, error) {
	defer res.Body.Close()
	raw, err := ReadCapped(res)
	switch {
	case errors.Is(err, ErrReplyTooLarge):
		g.log.WarnContext(ctx, "gateway: reply over the cap discarded", "op", call.Op, "status", res.StatusCode, "cap_bytes", MaxReplyBytes)
		note := ReplyTooLargeNote
		return Response{Status: res.StatusCode, Text: &note}, nil
	case err != nil:
		g.log.WarnContext(ctx, "gateway: reading the reply failed", "op", call.Op, "status", res.StatusCode, "error", err.Error())
		return Response{}, apperr.Wrap(errTransport, apperr.BadGateway, "http_call %q: the upstream's reply could not be read", call.Op)
	}
	if json.Valid(raw) {
		return Response{Status: res.StatusCode, Body: raw}, nil
	}
	text := string(raw)
	return Response{Status: res.StatusCode, Text: &text}, nil
}

// ReadCapped reads at most MaxReplyBytes of the decoded body, or
// ErrReplyTooLarge. The transport decodes the gzip it asked for; a gzip
// reply it did not ask for is decoded here, so the cap always counts
// decoded bytes. Every caller that reads an upstream's reply (http_calls,
// agent tool targets) reads it through here.
func ReadCapped(res *http.Response) ([]byte, error) {
	var body io.Reader = res.Body
	if !res.Uncompressed && strings.EqualFold(strings.TrimSpace(res.Header.Get("Content-Encoding")), "gzip") {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, MaxReplyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxReplyBytes {
		return nil, ErrReplyTooLarge
	}
	return raw, nil
}

// readLogged reads and closes a reply that is only logged, keeping its
// first maxLoggedBody bytes.
func readLogged(res *http.Response) string {
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxLoggedBody+1))
	return clipBytes(raw, maxLoggedBody)
}

func clipBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
