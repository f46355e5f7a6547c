package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/placeholder"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/models"
)

// Limits of an http_call (seed 000, "Limits and side effects").
const (
	// CallTimeout bounds one http_call from start to end: the token grant,
	// connecting, the request, its one retry after a 401 and reading the
	// reply. Connecting alone is bounded by DialTimeout.
	CallTimeout = 15 * time.Second
	// TokenTimeout bounds one token grant request.
	TokenTimeout = 10 * time.Second
	// UserAgent is sent unless the call's headers set one.
	UserAgent = "appruntime-gateway/1"
	// maxLoggedBody bounds what is logged of an upstream's or token
	// endpoint's words.
	maxLoggedBody = 512
)

// Sentinel causes of the gateway's errors: the apperr message is what a
// caller sees, the cause says which failure it was (errors.Is), and neither
// carries the upstream's words, which are logged instead.
var (
	errBlocked    = errors.New("gateway: destination address refused")
	errTokenFetch = errors.New("gateway: token grant failed")
	errTransport  = errors.New("gateway: upstream unreachable")
	errRefused    = errors.New("gateway: upstream refused a fresh token")
	errUnsendable = errors.New("gateway: the filled request cannot be sent")
)

// IsBlockedCall reports whether err is a call refused because its URL or
// token URL resolved to a refused address.
func IsBlockedCall(err error) bool { return errors.Is(err, errBlocked) }

// MayHaveArrived reports whether a failed call may have reached the upstream
// all the same: the request was sent (or being sent) when the connection
// failed or the time ran out. Every other failure happened before anything
// was sent.
func MayHaveArrived(err error) bool { return errors.Is(err, errTransport) }

// CallInput is what a call needs besides its template: the session's
// workspace (the integration must be of it), the session's values
// (task_id, agent_id, step_id, workspace_id: the only source of those
// names) and the payload's values for every other placeholder.
type CallInput struct {
	WorkspaceID string
	Session     map[string]string
	Values      map[string]any
}

// Response is an upstream's reply: its status and its JSON body, or its text
// when the body is not JSON (a reply over MaxReplyBytes is the text
// ReplyTooLargeNote).
type Response struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body,omitempty"`
	Text   *string         `json:"text,omitempty"`
}

// OK reports a 2xx status.
func (r Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Options configure a Gateway.
type Options struct {
	// Allow is the deployment's OutboundAllow: networks let through although
	// special-purpose (empty in production).
	Allow []netip.Prefix
	// Integrations loads the integration an http_call names.
	Integrations Integrations
	// Secrets opens integration secrets; nil refuses every auth kind but none.
	Secrets *crypt.Box
	// Log receives what callers are not told: upstream and token-endpoint
	// failures in detail, with the request id of the context.
	Log *slog.Logger
	// Resolver resolves upstream names; nil is the system's. Tests point it
	// at a local DNS stub.
	Resolver *net.Resolver
	// Timeout replaces CallTimeout when positive.
	Timeout time.Duration
	// WrapTransportFunc, when set, wraps the transport of each outbound
	// client, named "http_call" (upstream requests) or "token" (token
	// grants): metrics and the request id header go on there.
	WrapTransportFunc func(client string, rt http.RoundTripper) http.RoundTripper
}

// Outbound client names of Options.WrapTransportFunc.
const (
	ClientHTTPCall = "http_call"
	ClientToken    = "token"
)

// Gateway runs http_calls. It is safe for concurrent use; build one per
// process and share it (it holds the connection pool and the token cache).
type Gateway struct {
	transport    http.RoundTripper // upstream requests: sent by roundTrip, redirects returned, not followed
	tokenClient  *http.Client      // token grants: redirects refused
	integrations Integrations
	secrets      *crypt.Box
	log          *slog.Logger
	timeout      time.Duration
	tokens       *tokenCache
}

// New returns a Gateway whose every connection, token grants included, is
// dialed through NewDialer(o.Allow) with no proxy.
func New(o Options) *Gateway {
	d := NewDialer(o.Allow)
	d.Resolver = o.Resolver
	var transport http.RoundTripper = transportOn(d)
	tokenTransport := transport
	if o.WrapTransportFunc != nil {
		transport, tokenTransport = o.WrapTransportFunc(ClientHTTPCall, transport), o.WrapTransportFunc(ClientToken, transport)
	}
	g := &Gateway{
		transport: transport,
		tokenClient: &http.Client{Transport: tokenTransport, Timeout: TokenTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errRedirectWithCredentials
		}},
		integrations: o.Integrations,
		secrets:      o.Secrets,
		log:          o.Log,
		timeout:      o.Timeout,
		tokens:       newTokenCache(),
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.timeout <= 0 {
		g.timeout = CallTimeout
	}
	return g
}

// Call fills call's templates with in's values and sends it (seed 000). An
// upstream that answers at all, whatever its status, is a Response; only a
// failure before that is an error: an absent or unusable value 400, an
// integration of another workspace or a refused address 403, a token grant
// or transport failure 502.
func (g *Gateway) Call(ctx context.Context, call *bindingspec.HTTPCall, in CallInput) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	integ, err := g.integration(ctx, call, in.WorkspaceID)
	if err != nil {
		return Response{}, err
	}
	out, err := render(call, placeholder.Source{Session: in.Session, Payload: in.Values})
	if err != nil {
		return Response{}, err
	}
	creds, err := g.credentialsFor(call, integ)
	if err != nil {
		return Response{}, err
	}
	if creds.grant == nil {
		res, err := g.send(ctx, call, out, creds, nil, false)
		if err != nil {
			return Response{}, err
		}
		return g.reply(ctx, call, res)
	}
	return g.callWithToken(ctx, call, out, creds)
}

// callWithToken sends with the cached token; an upstream 401 evicts exactly
// that token and the call is sent once more, body and all, with a fresh one.
// A second 401 is an error: the integration's credentials are not accepted.
func (g *Gateway) callWithToken(ctx context.Context, call *bindingspec.HTTPCall, out outbound, creds credentials) (Response, error) {
	for attempt := 1; ; attempt++ {
		tok, err := g.tokens.get(ctx, creds.key, g.grant(creds))
		if err != nil {
			g.log.WarnContext(ctx, "gateway: token grant failed", append([]any{"op", call.Op, "integration_id", creds.key.integration}, tokenDetail(err)...)...)
			return Response{}, tokenError(call, err)
		}
		res, err := g.send(ctx, call, out, creds, tok, attempt > 1)
		if err != nil {
			return Response{}, err
		}
		if res.StatusCode != http.StatusUnauthorized {
			return g.reply(ctx, call, res)
		}
		g.tokens.evict(creds.key, tok)
		body := readLogged(res)
		if attempt == 2 {
			g.log.WarnContext(ctx, "gateway: upstream refused a fresh token", "op", call.Op,
				"integration_id", creds.key.integration, "upstream_body", body)
			return Response{}, apperr.Wrap(errRefused, apperr.BadGateway,
				"http_call %q: the upstream refused the integration's token twice (401)", call.Op)
		}
	}
}

// grant returns creds' grant on the token client, bounded by TokenTimeout.
func (g *Gateway) grant(creds credentials) func(context.Context) (*oauth2.Token, error) {
	return func(ctx context.Context) (*oauth2.Token, error) {
		ctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, g.tokenClient), TokenTimeout)
		defer cancel()
		return creds.grant(ctx)
	}
}

// integration loads the call's integration and checks it is of workspaceID;
// nil when the call names none.
func (g *Gateway) integration(ctx context.Context, call *bindingspec.HTTPCall, workspaceID string) (*models.Integration, error) {
	if call.IntegrationID == "" {
		return nil, nil
	}
	if g.integrations == nil {
		return nil, apperr.New(apperr.Internal, "the gateway has no integrations to load %s from", call.IntegrationID)
	}
	integ, err := g.integrations.Integration(ctx, call.IntegrationID)
	if apperr.Is(err, apperr.NotFound) {
		return nil, apperr.Forbiddenf("http_call %q: its integration no longer exists", call.Op)
	}
	if err != nil {
		return nil, err
	}
	if integ.WorkspaceID != workspaceID {
		return nil, apperr.Forbiddenf("http_call %q: its integration is not in the session's workspace", call.Op)
	}
	return &integ, nil
}

// outbound is a filled request, sendable any number of times.
type outbound struct {
	method string
	url    string
	header http.Header
	body   []byte // nil: no body
}

// render fills the call's url, query, headers and body_template.
func render(call *bindingspec.HTTPCall, src placeholder.Source) (outbound, error) {
	u, err := placeholder.URL(call.URL, src)
	if err != nil {
		return outbound{}, err
	}
	if len(call.Query) > 0 {
		names := make([]string, 0, len(call.Query))
		for name := range call.Query {
			names = append(names, name)
		}
		sort.Strings(names)
		var q strings.Builder
		for _, name := range names {
			v, err := placeholder.Text(call.Query[name], src)
			if err != nil {
				return outbound{}, err
			}
			if q.Len() > 0 {
				q.WriteByte('&')
			}
			q.WriteString(url.QueryEscape(name) + "=" + url.QueryEscape(v))
		}
		u = withQuery(u, q.String())
	}
	out := outbound{method: call.Method, url: u, header: http.Header{}}
	for name, tmpl := range call.Headers {
		v, err := placeholder.Header(tmpl, src)
		if err != nil {
			return outbound{}, err
		}
		out.header.Set(name, v)
	}
	// The transport negotiates compression itself, so that it can decode
	// the reply before the cap is applied.
	out.header.Del("Accept-Encoding")
	if out.header.Get("User-Agent") == "" {
		out.header.Set("User-Agent", UserAgent)
	}
	if len(call.BodyTemplate) > 0 {
		if out.body, err = placeholder.JSON(call.BodyTemplate, src, call.PruneEmptyBodyFields); err != nil {
			return outbound{}, err
		}
		if out.header.Get("Content-Type") == "" {
			out.header.Set("Content-Type", "application/json")
		}
	}
	return out, nil
}

// withQuery appends an encoded query to u, before any fragment.
func withQuery(u, query string) string {
	frag := ""
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u, frag = u[:i], u[i:]
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
		if strings.HasSuffix(u, "?") || strings.HasSuffix(u, "&") {
			sep = ""
		}
	}
	return u + sep + query + frag
}

// send sends one attempt. A failure to get any reply is an error: 403 when
// the guard refused the address, else 502; the cause is logged. The first
// attempt sends out's own header (render made it for this call); a retry
// sends a copy, as the first request may still be being written.
func (g *Gateway) send(ctx context.Context, call *bindingspec.HTTPCall, out outbound, creds credentials, tok *oauth2.Token, retry bool) (*http.Response, error) {
	var body *bytes.Reader
	if out.body != nil {
		body = bytes.NewReader(out.body)
	}
	header := out.header
	if retry {
		header = header.Clone()
	}
	req, err := newRequest(ctx, out, header, body)
	if err != nil {
		g.log.WarnContext(ctx, "gateway: cannot build the request", "op", call.Op, "error", err.Error())
		return nil, apperr.Wrap(errUnsendable, apperr.BadGateway, "http_call %q: the filled url is not a valid request", call.Op)
	}
	creds.setAuth(req, tok)
	reportSent(ctx, call.Op, req, out.body)
	// The request id goes on the header render made for this call, so the
	// outbound transport (requestid.Transport) need not copy the request
	// and its header to add it; a retry's copy already holds it.
	if id := requestid.From(ctx); requestid.Valid(id) && header.Get(requestid.Header) == "" {
		header.Set(requestid.Header, id)
	}
	res, err := g.roundTrip(req)
	if err == nil {
		return res, nil
	}
	g.log.WarnContext(ctx, "gateway: upstream request failed", "op", call.Op, "error", err.Error())
	if IsBlocked(err) {
		return nil, apperr.Wrap(errBlocked, apperr.Forbidden, "http_call %q: the url resolves to a refused address", call.Op)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, apperr.Wrap(errTransport, apperr.BadGateway, "http_call %q: the upstream did not answer in time", call.Op)
	}
	return nil, apperr.Wrap(errTransport, apperr.BadGateway, "http_call %q: the upstream could not be reached", call.Op)
}

// roundTrip sends req on the upstream transport itself, not through an
// http.Client: an http_call's redirect is its reply (following it would
// reach a URL the binding never named, with its credentials or body), so a
// client's redirect loop would never run, and it copies the header of every
// request for the hops it could follow. What a client adds to a single
// request is kept: a URL's userinfo is sent as basic auth unless the
// request has an Authorization already, and a reply always has a Body.
func (g *Gateway) roundTrip(req *http.Request) (*http.Response, error) {
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		password, _ := u.Password()
		req.SetBasicAuth(u.Username(), password)
	}
	res, err := g.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if res.Body == nil {
		res.Body = http.NoBody
	}
	return res, nil
}

func newRequest(ctx context.Context, out outbound, header http.Header, body *bytes.Reader) (*http.Request, error) {
	var req *http.Request
	var err error
	if body == nil {
		req, err = http.NewRequestWithContext(ctx, out.method, out.url, nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, out.method, out.url, body)
	}
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
}
