package gateway

import (
	"context"
	"net/http"
	"sort"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/placeholder"
	"github.com/appruntime/appruntime/internal/requestid"
)

// Masked replaces a credential wherever a request is shown.
const Masked = "••••••"

// Sent is a request as the gateway sends it, for the console's "try an op":
// its credentials masked, its body as text.
type Sent struct {
	Op      string     `json:"op"`
	Method  string     `json:"method"`
	URL     string     `json:"url"`
	Headers [][]string `json:"headers"` // [name, value], by name
	Body    string     `json:"body,omitempty"`
}

type sentKey struct{}

// WithSentFunc returns a context on which every request the gateway sends
// (each attempt, a retry after a 401 included; token grants excluded) is
// first reported to f, with Authorization masked.
func WithSentFunc(ctx context.Context, f func(Sent)) context.Context {
	return context.WithValue(ctx, sentKey{}, f)
}

// reportSent reports req to the context's SentFunc, if any.
func reportSent(ctx context.Context, op string, req *http.Request, body []byte) {
	f, _ := ctx.Value(sentKey{}).(func(Sent))
	if f == nil {
		return
	}
	f(sentOf(op, req.Method, req.URL.String(), req.Header, body, requestid.From(ctx)))
}

// sentOf shows a request; a header X-Request-Id holding requestID (the
// context's, which send adds to every attempt for the receiver's logs) is
// not the binding's and is left out, as the first attempt is shown before
// it is added and a retry copies it.
func sentOf(op, method, url string, header http.Header, body []byte, requestID string) Sent {
	s := Sent{Op: op, Method: method, URL: url, Headers: [][]string{}, Body: string(body)}
	names := make([]string, 0, len(header))
	for name := range header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range header[name] {
			if requestID != "" && name == requestid.Header && v == requestID {
				continue
			}
			if name == "Authorization" {
				v = Masked
			}
			s.Headers = append(s.Headers, []string{name, v})
		}
	}
	return s
}

// Preview fills call's templates as Call would and returns the request
// without sending it (nor fetching a token): a rest write, which cannot be
// rolled back, is shown this way. Its errors are Call's pre-flight ones.
func (g *Gateway) Preview(ctx context.Context, call *bindingspec.HTTPCall, in CallInput) (Sent, error) {
	integ, err := g.integration(ctx, call, in.WorkspaceID)
	if err != nil {
		return Sent{}, err
	}
	out, err := render(call, placeholder.Source{Session: in.Session, Payload: in.Values})
	if err != nil {
		return Sent{}, err
	}
	creds, err := g.credentialsFor(call, integ)
	if err != nil {
		return Sent{}, err
	}
	header := out.header.Clone()
	if creds.grant != nil || creds.bearer != "" {
		header.Set("Authorization", Masked)
	}
	return sentOf(call.Op, out.method, out.url, header, out.body, ""), nil
}
