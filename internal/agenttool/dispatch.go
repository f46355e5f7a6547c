package agenttool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/models"
)

// maxLoggedBody bounds what is logged of a refused reply.
const maxLoggedBody = 512

// Sentinel causes of Dispatch's errors (errors.Is); the apperr message is
// what the caller sees and never quotes the endpoint.
var (
	errBlocked   = errors.New("agenttool: destination address refused")
	errTransport = errors.New("agenttool: endpoint unreachable")
	errStatus    = errors.New("agenttool: endpoint answered an error status")
)

// IsBlocked reports whether err is a call refused because its URL resolved
// to a refused address (private, loopback, metadata… unless allowed).
func IsBlocked(err error) bool { return errors.Is(err, errBlocked) }

// Builtins runs builtin targets: tool.Set is one.
type Builtins interface {
	Run(ctx context.Context, call tool.Call) (tool.Result, error)
}

// DispatcherOptions configure a Dispatcher.
type DispatcherOptions struct {
	// Allow is the deployment's OutboundAllow: special-purpose networks let
	// through (empty in production, so a url target to a private address,
	// or a component on one, is refused).
	Allow []netip.Prefix
	// Signer mints the identity tokens of app targets; nil refuses them (501).
	Signer *IdentitySigner
	// Builtins runs builtin targets; nil refuses them (501).
	Builtins Builtins
	// Log receives what callers are not told: the endpoint's words.
	Log *slog.Logger
	// Timeout bounds one call from connecting to reading the reply;
	// gateway.CallTimeout when zero.
	Timeout time.Duration
}

// Dispatcher runs targets. It is safe for concurrent use; build one per
// process (it holds the connection pool).
type Dispatcher struct {
	client   *http.Client
	signer   *IdentitySigner
	builtins Builtins
	log      *slog.Logger
	timeout  time.Duration
}

// NewDispatcher returns a Dispatcher whose every connection goes through
// the gateway's guarded dialer (gateway.NewClient). Redirects are not
// followed: a target's origin is what its author wrote, and a redirect
// would carry the identity token or the body elsewhere.
func NewDispatcher(o DispatcherOptions) *Dispatcher {
	d := &Dispatcher{signer: o.Signer, builtins: o.Builtins, log: o.Log, timeout: o.Timeout}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.timeout <= 0 {
		d.timeout = gateway.CallTimeout
	}
	d.client = gateway.NewClient(o.Allow, 0)
	d.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return d
}

// Call is one run of a target: a tool call, or a pending-input button.
type Call struct {
	Target Target
	// Input is the tool's input (checked against its schema by the caller),
	// or the button's input: what ${input} references.
	Input json.RawMessage
	// Component is an app target's component, loaded by the caller from the
	// workspace of Identity.
	Component *Component
	// Identity is who the call is for; an app target's token carries it.
	Identity IdentityClaims
	// Agent is the calling agent (a builtin reads its settings).
	Agent models.Agent
	// Check resolves the app buttons of a card the reply may carry.
	Check CheckOptions
}

// Dispatch runs c's target and returns its parsed reply. For an app or url
// target it builds the request (BuildRequest), adds the identity token to
// an app target, sends it through the guarded client within the timeout,
// reads at most gateway.MaxReplyBytes and parses it (ParseReply). Errors:
// a reference the input lacks 400; a refused address 403; an endpoint that
// cannot be reached, answers a redirect or a non-2xx status, replies over
// the cap or breaks the result contract 502, with the endpoint's words only
// in the log.
func (d *Dispatcher) Dispatch(ctx context.Context, c Call) (Reply, error) {
	switch c.Target.Type {
	case TargetBuiltin:
		return d.builtin(ctx, c)
	case TargetApp, TargetURL:
	default:
		return Reply{}, apperr.New(apperr.Internal, "agenttool: unknown target type %q", c.Target.Type)
	}
	producer := ""
	if c.Target.Type == TargetApp {
		if c.Component == nil || c.Component.ID != c.Target.Component || c.Component.WorkspaceID != c.Identity.WorkspaceID {
			return Reply{}, apperr.New(apperr.Internal, "agenttool: the app target's component was not loaded from the call's workspace")
		}
		producer = c.Component.ID
	}
	out, err := BuildRequest(c.Target, c.Input, c.Component)
	if err != nil {
		return Reply{}, err
	}
	if c.Target.Type == TargetApp {
		if d.signer == nil {
			return Reply{}, apperr.NotImplementedf("identity keys are not configured on this deployment, so app targets cannot be called")
		}
		tok, err := d.signer.Mint(c.Component.ID, c.Identity)
		if err != nil {
			return Reply{}, err
		}
		out.Header.Set("Authorization", "Bearer "+tok)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	res, err := d.send(ctx, c.Target, out)
	if err != nil {
		return Reply{}, err
	}
	defer res.Body.Close()
	raw, err := gateway.ReadCapped(res)
	switch {
	case errors.Is(err, gateway.ErrReplyTooLarge):
		d.log.WarnContext(ctx, "agenttool: reply over the cap", "target", c.Target.String(), "status", res.StatusCode, "cap_bytes", gateway.MaxReplyBytes)
		return Reply{}, apperr.Wrap(err, apperr.BadGateway, "the tool's endpoint replied with more than %d bytes", gateway.MaxReplyBytes)
	case err != nil:
		d.log.WarnContext(ctx, "agenttool: reading the reply failed", "target", c.Target.String(), "error", err.Error())
		return Reply{}, apperr.Wrap(errTransport, apperr.BadGateway, "the tool's endpoint's reply could not be read")
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		d.log.WarnContext(ctx, "agenttool: endpoint answered an error status", "target", c.Target.String(),
			"status", res.StatusCode, "body", clip(string(raw), maxLoggedBody))
		return Reply{}, apperr.Wrap(errStatus, apperr.BadGateway, "the tool's endpoint answered %d", res.StatusCode)
	}
	reply, err := ParseReply(ctx, res.Header.Get("Content-Type"), raw, ReplyOptions{CheckOptions: c.Check, Producer: producer})
	if err != nil {
		d.log.WarnContext(ctx, "agenttool: reply refused", "target", c.Target.String(), "error", err.Error(),
			"body", clip(string(raw), maxLoggedBody))
		return Reply{}, err
	}
	return reply, nil
}

// send sends one request. A failure to get any reply is 403 when the guard
// refused the address, else 502; the cause is logged.
func (d *Dispatcher) send(ctx context.Context, t Target, out Outbound) (*http.Response, error) {
	var body io.Reader
	if out.Body != nil {
		body = bytes.NewReader(out.Body)
	}
	req, err := http.NewRequestWithContext(ctx, out.Method, out.URL, body)
	if err != nil {
		d.log.WarnContext(ctx, "agenttool: cannot build the request", "target", t.String(), "error", err.Error())
		return nil, apperr.Wrap(errTransport, apperr.BadGateway, "the tool's filled url is not a valid request")
	}
	req.Header = out.Header
	res, err := d.client.Do(req)
	if err != nil {
		d.log.WarnContext(ctx, "agenttool: request failed", "target", t.String(), "error", err.Error())
		switch {
		case gateway.IsBlocked(err):
			return nil, apperr.Wrap(errBlocked, apperr.Forbidden, "the tool's url resolves to a refused address")
		case errors.Is(err, context.DeadlineExceeded):
			return nil, apperr.Wrap(errTransport, apperr.BadGateway, "the tool's endpoint did not answer in time")
		}
		return nil, apperr.Wrap(errTransport, apperr.BadGateway, "the tool's endpoint could not be reached")
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		res.Body.Close()
		d.log.WarnContext(ctx, "agenttool: endpoint answered a redirect", "target", t.String(), "status", res.StatusCode,
			"location", clip(res.Header.Get("Location"), maxLoggedBody))
		return nil, apperr.Wrap(errStatus, apperr.BadGateway, "the tool's endpoint answered a redirect (%d); a target is not redirected", res.StatusCode)
	}
	return res, nil
}

// builtin runs a builtin target: its output is the content, a JSON string
// as its text, any other value as its JSON.
func (d *Dispatcher) builtin(ctx context.Context, c Call) (Reply, error) {
	if d.builtins == nil {
		return Reply{}, apperr.NotImplementedf("builtin %s cannot run on this deployment", c.Target.Name)
	}
	res, err := d.builtins.Run(ctx, tool.Call{BaseTool: c.Target.Name, Agent: c.Agent, Input: c.Input})
	if err != nil {
		return Reply{}, err
	}
	content, err := InputAsContent(res.Output)
	if err != nil {
		return Reply{}, apperr.Wrap(err, apperr.Internal, "builtin %s returned output that is not JSON", c.Target.Name)
	}
	return Reply{Content: content}, nil
}
