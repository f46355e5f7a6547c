package translate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/gateway"
)

// MaxReplyBytes caps a reply read from the engine: translations of a
// 256 KiB request, with room for languages that grow in translation.
const MaxReplyBytes = 4 << 20

// LibreTranslate is a Provider speaking LibreTranslate's API: POST
// <base>/translate with {q: [...], source: "auto", target, format: "text",
// api_key}, answered by {translatedText: [...]} or {error}. Its requests go
// through the gateway's SSRF guard: a self-hosted engine on a private
// address must be listed in OUTBOUND_ALLOW_CIDRS.
type LibreTranslate struct {
	url    string
	apiKey string
	http   *http.Client
}

// NewLibreTranslate returns a provider for the engine at baseURL, or nil
// when baseURL is empty (no engine configured). allow is the deployment's
// OUTBOUND_ALLOW_CIDRS.
func NewLibreTranslate(baseURL, apiKey string, allow []netip.Prefix) *LibreTranslate {
	if strings.TrimSpace(baseURL) == "" {
		return nil
	}
	return &LibreTranslate{
		url:    strings.TrimRight(baseURL, "/") + "/translate",
		apiKey: apiKey,
		http:   gateway.NewClient(allow, 0), // the run's deadline bounds the call
	}
}

type libreRequest struct {
	Q      []string `json:"q"`
	Source string   `json:"source"`
	Target string   `json:"target"`
	Format string   `json:"format"`
	APIKey string   `json:"api_key,omitempty"`
}

type libreReply struct {
	TranslatedText []string `json:"translatedText"`
	Error          string   `json:"error"`
}

// Translate implements Provider.
func (l *LibreTranslate) Translate(ctx context.Context, texts []string, target string) ([]string, error) {
	body, err := json.Marshal(libreRequest{Q: texts, Source: "auto", Target: target, Format: "text", APIKey: l.apiKey})
	if err != nil {
		return nil, fmt.Errorf("translate: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("translate: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := l.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller reports the deadline
		}
		if gateway.IsBlocked(err) {
			return nil, apperr.Wrap(err, apperr.BadGateway, "the translation engine is at an address OUTBOUND_ALLOW_CIDRS does not allow")
		}
		return nil, apperr.Wrap(err, apperr.BadGateway, "cannot reach the translation engine")
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxReplyBytes+1))
	if err != nil {
		return nil, apperr.Wrap(err, apperr.BadGateway, "cannot read the translation engine's reply")
	}
	if len(raw) > MaxReplyBytes {
		return nil, apperr.New(apperr.BadGateway, "the translation engine's reply is larger than %d bytes", MaxReplyBytes)
	}
	var reply libreReply
	decodeErr := json.Unmarshal(raw, &reply)
	if res.StatusCode != http.StatusOK {
		msg := http.StatusText(res.StatusCode)
		if decodeErr == nil && reply.Error != "" {
			msg = reply.Error
		}
		return nil, engineError(res.StatusCode, msg)
	}
	if decodeErr != nil {
		return nil, apperr.Wrap(decodeErr, apperr.BadGateway, "the translation engine's reply is not JSON")
	}
	if reply.TranslatedText == nil {
		return nil, apperr.Wrap(errors.New(string(raw[:min(len(raw), 200)])), apperr.BadGateway, "the translation engine's reply has no translatedText")
	}
	return reply.TranslatedText, nil
}

// engineError maps the engine's refusal: a 400 is the request's fault (a
// language it does not offer), said back to the bundle; the others are the
// engine's or the deployment's, whose details stay in the log.
func engineError(status int, msg string) error {
	cause := fmt.Errorf("translation engine answered %d: %s", status, msg)
	switch status {
	case http.StatusBadRequest:
		return apperr.Wrap(cause, apperr.Invalid, "the translation engine refused the request: %s", msg)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return apperr.Wrap(cause, apperr.Unavailable, "the translation engine is busy; retry")
	}
	return apperr.Wrap(cause, apperr.BadGateway, "the translation engine failed (status %d)", status)
}
