package runtime

import (
	"context"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/session"
)

// call is a verb's request after the prelude every verb shares: the body
// parsed, the session's binding loaded and, once payload has run, the
// payload decoded as a P.
type call[P any] struct {
	Request
	b       *binding.Loaded
	body    []byte
	p       P
	decoded bool // p holds the payload, decoded in the one strict pass
}

// begin parses body (one strict pass when the payload is a P, else the
// two-step decode for its error message) and loads the session's binding.
// Every refusal of the body comes before the binding is looked up.
func begin[P any](ctx context.Context, s *Service, c session.Claims, body []byte) (*call[P], error) {
	r, p, decoded, err := parse[P](body)
	if err != nil {
		return nil, err
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return nil, err
	}
	return &call[P]{Request: r, b: b, body: body, p: p, decoded: decoded}, nil
}

// bindingFirst loads the session's binding before the body is parsed, for
// a verb that chooses how to parse the body by what the binding declares
// for its op. A refusal of the body still comes first, as in begin.
func bindingFirst(ctx context.Context, s *Service, c session.Claims, body []byte) (*binding.Loaded, error) {
	b, err := s.binding(ctx, c)
	if err != nil {
		if _, perr := ParseRequest(body); perr != nil {
			return nil, perr
		}
		return nil, err
	}
	return b, nil
}

// beginOn is begin on a binding already loaded (bindingFirst).
func beginOn[P any](b *binding.Loaded, body []byte) (*call[P], error) {
	r, p, decoded, err := parse[P](body)
	if err != nil {
		return nil, err
	}
	return &call[P]{Request: r, b: b, body: body, p: p, decoded: decoded}, nil
}

// prelude is begin, then the op the request names, found by find among the
// binding's ops for verb (403 when the binding does not declare it), then
// the payload decoded as a P.
func prelude[O, P any](ctx context.Context, s *Service, c session.Claims, body []byte, verb string,
	find func(*binding.Loaded, string) (O, bool)) (*call[P], O, error) {
	var none O
	v, err := begin[P](ctx, s, c, body)
	if err != nil {
		return nil, none, err
	}
	op, ok := find(v.b, v.Op)
	if !ok {
		return nil, none, opNotAllowed(verb, v.Op)
	}
	if _, err := v.payload(); err != nil {
		return nil, none, err
	}
	return v, op, nil
}

// payload returns the payload decoded as a P.
func (v *call[P]) payload() (P, error) {
	if !v.decoded {
		if err := decodePayload(v.Payload, &v.p); err != nil {
			return v.p, err
		}
		v.decoded = true
	}
	return v.p, nil
}

// payloadAs decodes v's payload as a Q rather than a P, for a verb whose op
// decides the payload's shape (a /read of an http_calls op takes its
// placeholder values). One strict pass when the raw payload was not kept.
func payloadAs[Q, P any](v *call[P]) (Q, error) {
	var q Q
	if v.Payload == nil {
		if _, q, ok := parseOnce[Q](v.body); ok {
			return q, nil
		}
		r, err := ParseRequest(v.body)
		if err != nil {
			return q, err
		}
		v.Payload = r.Payload
	}
	err := decodePayload(v.Payload, &q)
	return q, err
}

// opNotAllowed is the 403 for an op the binding does not declare.
func opNotAllowed(verb, op string) error {
	return apperr.Forbiddenf("op %q is not allowed for /%s by this binding", op, verb)
}

// fixedMap resolves a binding's fixed filters or values against the
// session. Most ops fix nothing: their requests build no session map.
func fixedMap(fixed map[string]any, c session.Claims) (map[string]any, error) {
	if len(fixed) == 0 {
		return nil, nil
	}
	sessionValues := c.Values()
	out := make(map[string]any, len(fixed))
	for col, v := range fixed {
		val, err := fillFixed(v, sessionValues)
		if err != nil {
			return nil, apperr.Wrap(err, apperr.Internal, "binding fixed value of %s", col)
		}
		out[col] = val
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
