package agenttool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/placeholder"
	"github.com/appruntime/appruntime/internal/schema"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// Limits of a declaration. The name rule is the intersection of what the
// model providers accept for a function/tool name, so one declaration works
// on all of them: Anthropic and OpenAI take ^[a-zA-Z0-9_-]{1,64}$, Gemini
// also wants the first character to be a letter or an underscore.
const (
	MaxNameLength        = 64
	MaxDisplayNameLength = 80   // characters
	MaxDescriptionLength = 1024 // characters; OpenAI's limit for a function description
	MaxInputSchemaBytes  = 64 << 10
	MaxPathLength        = 1024
	MaxURLLength         = 2048
	MaxQueryParams       = 32
	MaxHeaders           = 32
	MaxHeaderValueLength = 4096
	MaxBodyTemplateBytes = 64 << 10
)

// nameRule is the provider-safe tool name (see the limits above).
var nameRule = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`)

// Target types (seed 003, "Targets"; seed's "kazzle" is our builtin).
const (
	TargetApp     = "app"     // one of the workspace's component integrations
	TargetURL     = "url"     // an external endpoint, origin and method literal
	TargetBuiltin = "builtin" // a handler of ours, by name
)

// Methods are the only HTTP methods a target may use (seed 003, RequestSpec).
var Methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// BuiltinNames are the handlers a builtin target may name: the base tools
// that run without a configured tool.
var BuiltinNames = basetool.Names(basetool.IsDirect)

// managedHeaders are set by the HTTP stack or by us and cannot be declared:
// the transport frames the request (Host, Content-Length, hop-by-hop
// headers); an app target's Authorization carries the identity token.
var managedHeaders = []string{
	"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Te", "Trailer",
	"Proxy-Authorization", "Proxy-Connection",
}

// Declaration is one agent tool (seed 003, "Declaring a tool"). Its JSON
// names are the seed's.
type Declaration struct {
	Name        string          `json:"name"`
	DisplayName string          `json:"displayName"`
	Description string          `json:"description"`
	Input       json.RawMessage `json:"input"`
	Target      Target          `json:"target"`

	schema *jsonschema.Schema
}

// Target is what a tool call or a pending-input button invokes (seed 003,
// "Targets"). Which fields it has depends on Type: app has Component and
// Path, url has URL, both have Method and optionally Query, Headers and
// Body; builtin has Name only. There are no implicit request defaults: no
// body, query or header is sent that the target does not declare (apart
// from the framing headers, a User-Agent, a JSON Content-Type when a body is
// declared without one, and an app target's Authorization).
type Target struct {
	Type string `json:"type"`
	// Component is the id of a component integration of the workspace.
	// In a pending-input button it may be omitted: the button then targets
	// the component whose reply carried the card (and it may name no other).
	Component string            `json:"component,omitempty"`
	Path      string            `json:"path,omitempty"`
	URL       string            `json:"url,omitempty"`
	Name      string            `json:"name,omitempty"`
	Method    string            `json:"method,omitempty"`
	Query     map[string]string `json:"query,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Body is a JSON value whose strings may hold references; absent means
	// no body.
	Body json.RawMessage `json:"body,omitempty"`
}

// IsHTTP reports whether the target sends an HTTP request.
func (t Target) IsHTTP() bool { return t.Type == TargetApp || t.Type == TargetURL }

// ComponentSource loads the component integrations a target names.
type ComponentSource interface {
	// Component returns the component integration id of workspaceID, or a
	// not_found error when there is none of kind component there.
	Component(ctx context.Context, workspaceID, id string) (Component, error)
}

// CheckOptions are what a save-time check needs besides the declaration.
type CheckOptions struct {
	WorkspaceID string
	// Components resolves an app target's component (nil: every app target
	// is refused).
	Components ComponentSource
}

// ParseDeclaration decodes and checks a declaration as an admin saves it:
// strict JSON (unknown fields refused), the name rule, the lengths, the
// input schema compiled strictly, and the target (see CheckTarget). Every
// refusal is a 400 naming the field.
func ParseDeclaration(ctx context.Context, raw []byte, o CheckOptions) (Declaration, error) {
	var d Declaration
	if err := strictjson.Decode(raw, &d); err != nil {
		return Declaration{}, err
	}
	if err := d.check(); err != nil {
		return Declaration{}, err
	}
	if err := CheckTarget(ctx, d.Target, "target", o, ""); err != nil {
		return Declaration{}, err
	}
	return d, nil
}

// check validates everything but the target.
func (d *Declaration) check() error {
	if !nameRule.MatchString(d.Name) {
		return apperr.Invalidf("name %q must be 1 to %d letters, digits, _ or -, starting with a letter or _ (what every model provider accepts)",
			clip(d.Name, 80), MaxNameLength)
	}
	if err := checkText(d.DisplayName, "displayName", MaxDisplayNameLength); err != nil {
		return err
	}
	if err := checkText(d.Description, "description", MaxDescriptionLength); err != nil {
		return err
	}
	if strictjson.IsNull(d.Input) {
		return apperr.Invalidf("input (a JSON Schema of the tool's input) is required")
	}
	if len(d.Input) > MaxInputSchemaBytes {
		return apperr.Invalidf("input is %d bytes; a schema may be at most %d", len(d.Input), MaxInputSchemaBytes)
	}
	compiled, err := schema.Compile(d.Input, "input")
	if err != nil {
		return err
	}
	var root struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(d.Input, &root); err != nil || string(bytes.TrimSpace(root.Type)) != `"object"` {
		return apperr.Invalidf(`input must be a JSON Schema with "type": "object" at its root (a tool's input is an object)`)
	}
	d.schema = compiled
	return nil
}

// checkText checks a required text of 1 to max characters.
func checkText(s, field string, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		return apperr.Invalidf("%s is not valid UTF-8", field)
	case strings.TrimSpace(s) == "":
		return apperr.Invalidf("%s is required", field)
	case n > max:
		return apperr.Invalidf("%s is %d characters; at most %d are allowed", field, n, max)
	}
	return nil
}

// CheckInput validates a call's input against the declaration's schema: a
// 400 saying where and why it fails.
func (d *Declaration) CheckInput(input json.RawMessage) error {
	if d.schema == nil {
		compiled, err := schema.Compile(d.Input, "input")
		if err != nil {
			return apperr.Wrap(err, apperr.Internal, "tool %q has an input schema that no longer compiles", d.Name)
		}
		d.schema = compiled
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return apperr.Invalidf("input is not valid JSON: %v", err)
	}
	mismatch, err := schema.Mismatch(d.schema, value)
	if err != nil {
		return err
	}
	if mismatch != "" {
		return apperr.Invalidf("input does not match tool %q's schema: %s", d.Name, mismatch)
	}
	return nil
}

// CheckTarget checks a target: its type and the fields of that type only, a
// method of Methods, the templates (every reference well-formed and known;
// ${env.…} only on an app target, and only names its component declares),
// the url's literal origin, the headers (no managed header; an app target
// may not set Authorization, whatever its case), and the sizes. field names
// the target in errors. producer is the component a pending-input button
// falls back to (empty for a declaration, whose app target must name one).
func CheckTarget(ctx context.Context, t Target, field string, o CheckOptions, producer string) error {
	switch t.Type {
	case TargetBuiltin:
		if t.Component != "" || t.Path != "" || t.URL != "" || t.Method != "" || len(t.Query) > 0 || len(t.Headers) > 0 || !strictjson.IsNull(t.Body) {
			return apperr.Invalidf("%s: a builtin target has only a name", field)
		}
		if !slices.Contains(BuiltinNames, t.Name) {
			return apperr.Invalidf("%s.name %q must be one of %s", field, t.Name, strings.Join(BuiltinNames, ", "))
		}
		return nil
	case TargetApp, TargetURL:
	case "":
		return apperr.Invalidf("%s.type is required: app, url or builtin", field)
	default:
		return apperr.Invalidf("%s.type %q must be app, url or builtin", field, t.Type)
	}
	if t.Name != "" {
		return apperr.Invalidf("%s: name belongs to a builtin target", field)
	}
	if !slices.Contains(Methods, t.Method) {
		return apperr.Invalidf("%s.method %q must be one of %s (upper case)", field, t.Method, strings.Join(Methods, ", "))
	}
	var refs []ref
	var env map[string]string
	if t.Type == TargetApp {
		if t.URL != "" {
			return apperr.Invalidf("%s: an app target has a component and a path, not a url", field)
		}
		comp, err := targetComponent(ctx, t, field, o, producer)
		if err != nil {
			return err
		}
		env = comp.Env
		if refs, err = checkPath(t.Path, field+".path"); err != nil {
			return err
		}
	} else {
		if t.Component != "" || t.Path != "" {
			return apperr.Invalidf("%s: a url target has a url, not a component or path", field)
		}
		var err error
		if refs, err = checkURL(t.URL, field+".url"); err != nil {
			return err
		}
	}
	more, err := checkRequestParts(t, field)
	if err != nil {
		return err
	}
	refs = append(refs, more...)
	for _, r := range refs {
		if r.ns != nsEnv {
			continue
		}
		if t.Type != TargetApp {
			return apperr.Invalidf("%s: %s: only an app target has env (its component's)", field, r)
		}
		if _, ok := env[r.name]; !ok {
			return apperr.Invalidf("%s: %s: the component declares no env variable %s", field, r, r.name)
		}
	}
	return nil
}

// targetComponent loads the component an app target names (or, for a
// button, the producer's).
func targetComponent(ctx context.Context, t Target, field string, o CheckOptions, producer string) (Component, error) {
	id := t.Component
	switch {
	case id == "" && producer == "":
		return Component{}, apperr.Invalidf("%s.component (the id of a component integration) is required", field)
	case id == "":
		id = producer
	case producer != "" && id != producer:
		return Component{}, apperr.Invalidf("%s.component: a button may target only the component that returned it", field)
	}
	if o.Components == nil {
		return Component{}, apperr.Invalidf("%s: app targets are not available here", field)
	}
	comp, err := o.Components.Component(ctx, o.WorkspaceID, id)
	if apperr.Is(err, apperr.NotFound) {
		return Component{}, apperr.Invalidf("%s.component %q is not a component integration of this workspace", field, clip(id, 60))
	}
	return comp, err
}

// checkPath checks an app target's path: it starts with "/", holds no query
// or fragment (query goes in query) and no literal dot segment; references
// may fill parts of segments.
func checkPath(path, field string) ([]ref, error) {
	switch {
	case !strings.HasPrefix(path, "/"):
		return nil, apperr.Invalidf("%s must start with /", field)
	case len(path) > MaxPathLength:
		return nil, apperr.Invalidf("%s is longer than %d bytes", field, MaxPathLength)
	case strings.ContainsAny(path, "?#"):
		return nil, apperr.Invalidf("%s may not hold ? or #: declare query parameters in query", field)
	case placeholder.HasControl(path, false) || strings.ContainsAny(path, " \\"):
		return nil, apperr.Invalidf("%s holds a space, a backslash or a control character", field)
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return nil, apperr.Invalidf("%s holds a %q segment", field, seg)
		}
	}
	t, err := parseTemplate(path)
	if err != nil {
		return nil, apperr.Invalidf("%s: %v", field, err)
	}
	return t.refs(), nil
}

// checkURL checks a url target's url: absolute http or https, the scheme and
// authority literal (no reference, no userinfo), no fragment. References
// may sit in the path and the query.
func checkURL(raw, field string) ([]ref, error) {
	if raw == "" {
		return nil, apperr.Invalidf("%s is required for a url target", field)
	}
	if len(raw) > MaxURLLength {
		return nil, apperr.Invalidf("%s is longer than %d bytes", field, MaxURLLength)
	}
	t, err := parseTemplate(raw)
	if err != nil {
		return nil, apperr.Invalidf("%s: %v", field, err)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return nil, apperr.Invalidf("%s must be an absolute http or https URL", field)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	switch {
	case authority == "":
		return nil, apperr.Invalidf("%s has no host", field)
	case strings.Contains(authority, "$"):
		return nil, apperr.Invalidf("%s: the origin (scheme, host and port) is literal; a reference may sit only in the path or the query", field)
	case strings.Contains(authority, "@"):
		return nil, apperr.Invalidf("%s may not carry userinfo", field)
	case strings.Contains(rest, "#"):
		return nil, apperr.Invalidf("%s may not carry a fragment", field)
	case placeholder.HasControl(raw, false) || strings.ContainsAny(raw, " \\"):
		return nil, apperr.Invalidf("%s holds a space, a backslash or a control character", field)
	}
	if _, err := url.Parse(scheme + "://" + authority); err != nil {
		return nil, apperr.Invalidf("%s has an invalid host or port", field)
	}
	for _, seg := range strings.Split(strings.SplitN(rest[end:], "?", 2)[0], "/") {
		if seg == "." || seg == ".." {
			return nil, apperr.Invalidf("%s holds a %q segment", field, seg)
		}
	}
	return t.refs(), nil
}

// checkRequestParts checks query, headers and body, returning their
// references.
func checkRequestParts(t Target, field string) ([]ref, error) {
	var refs []ref
	if len(t.Query) > MaxQueryParams {
		return nil, apperr.Invalidf("%s.query has %d parameters; at most %d are allowed", field, len(t.Query), MaxQueryParams)
	}
	for name, v := range t.Query {
		if name == "" {
			return nil, apperr.Invalidf("%s.query has an empty parameter name", field)
		}
		tmpl, err := parseTemplate(v)
		if err != nil {
			return nil, apperr.Invalidf("%s.query.%s: %v", field, name, err)
		}
		refs = append(refs, tmpl.refs()...)
	}
	if len(t.Headers) > MaxHeaders {
		return nil, apperr.Invalidf("%s.headers has %d headers; at most %d are allowed", field, len(t.Headers), MaxHeaders)
	}
	seen := map[string]string{}
	for name, v := range t.Headers {
		canon := http.CanonicalHeaderKey(name)
		switch {
		case !validHeaderName(name):
			return nil, apperr.Invalidf("%s.headers: %q is not a valid header name", field, clip(name, 60))
		case seen[canon] != "":
			return nil, apperr.Invalidf("%s.headers names %s twice (%q and %q)", field, canon, seen[canon], name)
		case canon == "Authorization" && t.Type == TargetApp:
			return nil, apperr.Invalidf("%s.headers: an app target cannot set Authorization; it carries the identity token", field)
		case slices.Contains(managedHeaders, canon):
			return nil, apperr.Invalidf("%s.headers: %s is set by the HTTP client and cannot be declared", field, canon)
		case len(v) > MaxHeaderValueLength:
			return nil, apperr.Invalidf("%s.headers.%s is longer than %d bytes", field, name, MaxHeaderValueLength)
		case placeholder.HasControl(v, true):
			return nil, apperr.Invalidf("%s.headers.%s holds a control character", field, name)
		}
		seen[canon] = name
		tmpl, err := parseTemplate(v)
		if err != nil {
			return nil, apperr.Invalidf("%s.headers.%s: %v", field, name, err)
		}
		refs = append(refs, tmpl.refs()...)
	}
	if strictjson.IsNull(t.Body) {
		return refs, nil
	}
	if t.Method == http.MethodGet {
		return nil, apperr.Invalidf("%s: a GET carries no body", field)
	}
	if len(t.Body) > MaxBodyTemplateBytes {
		return nil, apperr.Invalidf("%s.body is %d bytes; at most %d are allowed", field, len(t.Body), MaxBodyTemplateBytes)
	}
	body, err := jsonRefs(t.Body)
	if err != nil {
		return nil, apperr.Invalidf("%s.body: %v", field, err)
	}
	return append(refs, body...), nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// String names the target for logs: its type and where it points.
func (t Target) String() string {
	switch t.Type {
	case TargetApp:
		return fmt.Sprintf("app %s %s%s", t.Method, t.Component, t.Path)
	case TargetURL:
		return fmt.Sprintf("url %s %s", t.Method, t.URL)
	}
	return "builtin " + t.Name
}
