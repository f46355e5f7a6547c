package runtime

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/placeholder"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// MaxBodyBytes caps every runtime request body (seed 000: 256 KiB, every verb).
const MaxBodyBytes = 256 << 10

// Request is the one body shape of every verb: {"op": NAME, "payload": {...}}.
// AwaitID is optional; a bundle that echoes the await_id it was given on init
// is checked against the session's own await.
type Request struct {
	Op      string          `json:"op"`
	Payload json.RawMessage `json:"payload,omitempty"`
	AwaitID string          `json:"await_id,omitempty"`
}

// ParseRequest decodes a verb's body strictly: a JSON object with a string op,
// an optional object payload and nothing else.
func ParseRequest(body []byte) (Request, error) {
	var r Request
	if len(bytes.TrimSpace(body)) == 0 {
		return r, apperr.Invalidf("request body is empty; send {\"op\": NAME, \"payload\": {...}}")
	}
	if err := strictjson.Unmarshal(body, &r); err != nil {
		return r, apperr.Invalidf("bad request body: %s", err)
	}
	if r.Op == "" {
		return r, apperr.Invalidf("op is required")
	}
	if r.AwaitID != "" && !models.IsID(r.AwaitID) {
		return r, apperr.Invalidf("await_id must be a UUID, got %q", r.AwaitID)
	}
	if len(r.Payload) > 0 && !isJSONObject(r.Payload) && string(r.Payload) != "null" {
		return r, apperr.Invalidf("payload must be a JSON object")
	}
	return r, nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// envelope is a request whose payload is decoded as P in the same pass.
type envelope[P any] struct {
	Op      string `json:"op"`
	Payload *P     `json:"payload"`
	AwaitID string `json:"await_id,omitempty"`
}

// parse decodes a verb's body and its payload as a P. The common case takes
// one strict pass; a body that pass refuses is decoded again in two steps
// (ParseRequest, then the payload), so every refusal and its message are
// those of the two-step decode. ok reports that payload holds the decoded
// payload; when it is false the verb decodes r.Payload itself (a /read of
// an http_calls op takes a different payload).
func parse[P any](body []byte) (r Request, payload P, ok bool, err error) {
	if r, payload, ok = parseOnce[P](body); ok {
		return r, payload, true, nil
	}
	r, err = ParseRequest(body)
	return r, payload, false, err
}

// parseOnce is parse's one strict pass: ok is false when the body is not a
// request whose payload is a P (r.Payload is never set).
func parseOnce[P any](body []byte) (r Request, payload P, ok bool) {
	if _, raw := any(payload).(json.RawMessage); raw {
		// A payload passed on as sent (/capability) takes the two-step
		// decode, which keeps it and checks it is an object.
		return r, payload, false
	}
	var e envelope[P]
	if !strictjson.Try(body, &e) || e.Op == "" || (e.AwaitID != "" && !models.IsID(e.AwaitID)) {
		return r, payload, false
	}
	if e.Payload != nil {
		payload = *e.Payload
	}
	return Request{Op: e.Op, AwaitID: e.AwaitID}, payload, true
}

// decodePayload decodes a verb's payload (absent or null = empty) into v strictly.
func decodePayload(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	if err := strictjson.Unmarshal(raw, v); err != nil {
		return apperr.Invalidf("bad payload: %s", err)
	}
	return nil
}

// fillFixed resolves a binding's fixed value: a string has its session
// placeholders filled (internal/placeholder.FillSession, the grammar the
// gateway uses); non-strings are kept. Only session values are consulted: a
// bundle can never supply a fixed value.
func fillFixed(v any, session map[string]string) (any, error) {
	s, ok := v.(string)
	if !ok {
		return normaliseNumber(v), nil
	}
	return placeholder.FillSession(s, session)
}

// normaliseNumber turns float64 from a binding document decoded without
// UseNumber into json.Number so that integral values bind as integers.
func normaliseNumber(v any) any {
	if f, ok := v.(float64); ok {
		return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
	}
	return v
}
