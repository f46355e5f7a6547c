package bindingspec

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// Input is a binding as an admin submits it; allowed_operations is kept raw
// so that it can be decoded strictly.
type Input struct {
	Name              string          `json:"name"`
	BindingKind       string          `json:"binding_kind"`
	IntegrationID     string          `json:"integration_id"` // "" when the binding names none
	AllowedOperations json.RawMessage `json:"allowed_operations"`
}

// Limits of a binding's names.
const (
	MaxNameLength       = 200 // a binding's name
	MaxOpNameLength     = 100 // an op, action, feed event or capability name
	MaxIdentifierLength = 63  // PostgreSQL truncates longer identifiers silently
)

// Integration kinds a postgres binding may read and write through. sqlite is
// the embedded dev mode's demo data source.
const (
	IntegrationPostgres = "postgres"
	IntegrationSQLite   = "sqlite"
	// IntegrationREST is the kind of integration a rest binding's reads and
	// writes are requests against (its base_url and credentials).
	IntegrationREST = "rest"
)

// Methods an http_call may use.
var httpMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// authKinds an http_call may use.
var authKinds = []string{AuthNone, AuthBearer, AuthOAuth2Password, AuthClientCredentials}

var (
	opNamePattern     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	identifierPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Validate checks a binding before it is saved and returns its parsed
// allowed_operations. Every refusal is an apperr.Invalid (400) whose message
// names the offending entry, such as
// `writes[1] "save_line": key_columns is required for mode update`, except a
// tools op whose params list a configured tool's stored setting: a 403, as
// /run answers it (CheckParams). ws answers what the document names of the
// workspace it is saved in (its integrations and configured tools); an error
// of ws is returned as it is.
func Validate(ctx context.Context, ws Workspace, in Input) (Spec, error) {
	if _, err := field.Name(in.Name, "name", MaxNameLength); err != nil {
		return Spec{}, err
	}
	switch in.BindingKind {
	case KindPostgres, KindREST:
	case "":
		return Spec{}, apperr.Invalidf("binding_kind is required: postgres or rest")
	default:
		return Spec{}, apperr.Invalidf("binding_kind %q is not supported: use postgres or rest", in.BindingKind)
	}
	spec, err := decodeSpec(in.AllowedOperations)
	if err != nil {
		return Spec{}, err
	}
	v := validator{ctx: ctx, ws: ws, kind: in.BindingKind, declared: map[string]string{}}
	if err := v.bindingIntegration(in.IntegrationID); err != nil {
		return Spec{}, err
	}
	for _, check := range []func(*Spec) error{v.reads, v.writes, v.httpCalls, v.tools, v.actions, v.capabilities} {
		if err := check(&spec); err != nil {
			return Spec{}, err
		}
	}
	return spec, nil
}

// Workspace is what a binding document may name in the workspace it is saved
// in. internal/binding answers it from the platform database
// (binding.WorkspaceOf); the rules only ask.
type Workspace interface {
	// Integration returns the workspace's integration id (its id, name, kind
	// and base_url), or found false when the workspace has none by that id.
	Integration(ctx context.Context, id string) (in models.Integration, found bool, err error)
	// ConfiguredTools returns the workspace's configured tools whose display
	// name is one of names. Display names are unique per agent, not per
	// workspace, so a name may have several.
	ConfiguredTools(ctx context.Context, names []string) ([]ConfiguredTool, error)
}

// ConfiguredTool is what validation needs of a configured tool.
type ConfiguredTool struct {
	DisplayName string
	BaseTool    string
}

// validator carries what the checks of one binding share: the op namespace
// declared so far and the integrations already resolved.
type validator struct {
	ctx         context.Context
	ws          Workspace
	kind        string
	declared    map[string]string // op name → label of the entry that declared it
	integration map[string]models.Integration
	own         *models.Integration // the binding's own integration; nil when it names none
}

// declare claims op in the one namespace of reads, writes, http_calls and tools.
func (v *validator) declare(label, op string) error {
	if op == "" {
		return apperr.Invalidf("%s: op is required", label)
	}
	if err := checkOpName(op); err != nil {
		return apperr.Invalidf("%s: op %s", label, err)
	}
	if first, ok := v.declared[op]; ok {
		return apperr.Invalidf("%s: op name %q is already declared by %s; op names are one namespace across reads, writes, http_calls and tools", label, op, first)
	}
	v.declared[op] = label
	return nil
}

func checkOpName(name string) error {
	if len(name) > MaxOpNameLength || !opNamePattern.MatchString(name) {
		return fmt.Errorf("%q must be at most %d letters, digits, _, . or -, starting with a letter or _", name, MaxOpNameLength)
	}
	return nil
}

// lookupIntegration returns the integration id of this workspace, or a 400
// naming it (after prefix) when it is unknown or another workspace's.
func (v *validator) lookupIntegration(prefix, id string) (models.Integration, error) {
	if in, ok := v.integration[id]; ok {
		return in, nil
	}
	notOurs := apperr.Invalidf("%sintegration_id %q is not an integration of this workspace", prefix, id)
	if !models.IsID(id) {
		return models.Integration{}, notOurs
	}
	in, found, err := v.ws.Integration(v.ctx, id)
	if err != nil {
		return models.Integration{}, err
	}
	if !found {
		return models.Integration{}, notOurs
	}
	if v.integration == nil {
		v.integration = map[string]models.Integration{}
	}
	v.integration[id] = in
	return in, nil
}

// bindingIntegration checks the binding's own data source: a postgres
// binding needs one of a data-source kind; a rest binding may name any.
func (v *validator) bindingIntegration(id string) error {
	if id == "" {
		if v.kind == KindPostgres {
			return apperr.Invalidf("integration_id is required: a postgres binding reads and writes through a %s (or dev-only %s) data-source integration",
				IntegrationPostgres, IntegrationSQLite)
		}
		return nil
	}
	in, err := v.lookupIntegration("", id)
	if err != nil {
		return err
	}
	v.own = &in
	if v.kind == KindPostgres && in.Kind != IntegrationPostgres && in.Kind != IntegrationSQLite {
		return apperr.Invalidf("integration_id %q is a %s integration; a postgres binding needs a %s (or dev-only %s) data source",
			id, in.Kind, IntegrationPostgres, IntegrationSQLite)
	}
	return nil
}

func (v *validator) reads(s *Spec) error {
	for i := range s.Reads {
		r := &s.Reads[i]
		label := entryLabel("reads", i, r.Op)
		if err := v.declare(label, r.Op); err != nil {
			return err
		}
		if v.kind == KindREST {
			if err := v.restRead(r); err != nil {
				return apperr.Invalidf("%s: %s", label, err)
			}
			continue
		}
		if r.Request != nil {
			return apperr.Invalidf("%s: request applies to a rest binding; a postgres binding reads its table", label)
		}
		if err := checkTable(r.Table); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if len(r.Columns) == 0 {
			return apperr.Invalidf("%s: columns must list at least one selectable column", label)
		}
		if err := checkColumns("columns", r.Columns); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if err := checkColumns("filterable", r.Filterable); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		// A filter or order on a column the read does not expose would let a
		// bundle learn that column's values by probing, so both are limited
		// to the declared columns.
		for _, c := range r.Filterable {
			if !slices.Contains(r.Columns, c) {
				return apperr.Invalidf("%s: filterable column %q is not among the read's columns", label, c)
			}
		}
		seen := map[string]bool{}
		for j, o := range r.OrderBy {
			if o.Column == "" {
				return apperr.Invalidf("%s: order_by[%d] needs a column", label, j)
			}
			if !slices.Contains(r.Columns, o.Column) {
				return apperr.Invalidf("%s: order_by column %q is not among the read's columns", label, o.Column)
			}
			if seen[o.Column] {
				return apperr.Invalidf("%s: order_by column %q is listed twice", label, o.Column)
			}
			seen[o.Column] = true
		}
		if r.Limit < 0 || r.Limit > MaxReadLimit {
			return apperr.Invalidf("%s: limit %d is out of range 0..%d (0 means %d)", label, r.Limit, MaxReadLimit, DefaultReadLimit)
		}
		if err := checkFixed("fixed_filters", r.FixedFilters); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
	}
	return nil
}

func (v *validator) writes(s *Spec) error {
	for i := range s.Writes {
		w := &s.Writes[i]
		label := entryLabel("writes", i, w.Op)
		if err := v.declare(label, w.Op); err != nil {
			return err
		}
		if v.kind == KindREST {
			if err := v.restWrite(w); err != nil {
				return apperr.Invalidf("%s: %s", label, err)
			}
			continue
		}
		if w.Request != nil {
			return apperr.Invalidf("%s: request applies to a rest binding; a postgres binding writes its table", label)
		}
		if err := checkTable(w.Table); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		switch w.Mode {
		case ModeInsert, ModeUpdate, ModeUpsert:
		case "":
			return apperr.Invalidf("%s: mode is required: insert, update or upsert", label)
		default:
			return apperr.Invalidf("%s: mode %q is not one of insert, update, upsert", label, w.Mode)
		}
		if (w.Mode == ModeUpdate || w.Mode == ModeUpsert) && len(w.KeyColumns) == 0 {
			return apperr.Invalidf("%s: key_columns is required for mode %s", label, w.Mode)
		}
		if err := checkColumns("key_columns", w.KeyColumns); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if len(w.Columns) == 0 {
			return apperr.Invalidf("%s: columns must list at least one writable column", label)
		}
		if err := checkColumns("columns", w.Columns); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if err := checkFixed("fixed_values", w.FixedValues); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		for _, c := range w.Columns {
			if _, ok := w.FixedValues[c]; ok {
				return apperr.Invalidf("%s: column %q is both writable and in fixed_values; a fixed value cannot be set by a request", label, c)
			}
		}
		if col := w.UnscopedFixedColumn(); col != "" {
			return apperr.Invalidf("%s: fixed_values column %q must also be one of key_columns in mode %s: "+
				"a fixed value scopes the row an %s may change, it may not overwrite the row a request names", label, col, w.Mode, w.Mode)
		}
	}
	return nil
}

// systemSchemas are the schemas of the database's own catalogs, which no
// binding may name (compared case-insensitively): Postgres's information
// schema, and SQL Server's sys and INFORMATION_SCHEMA. Every Postgres
// schema whose name begins with pg_ is the system's too (pg_catalog,
// pg_toast, pg_temp_N): no user may create one.
var systemSchemas = []string{"information_schema", "sys"}

// checkTable accepts a safe identifier, optionally schema-qualified, that
// is not in a system schema: a binding on pg_catalog.pg_authid read a
// server's password hashes, and one on pg_db_role_setting wrote the
// settings of its every new connection (issue 23). An unqualified name
// beginning with pg_ is refused too, since Postgres looks it up in
// pg_catalog first whatever the search path.
func checkTable(table string) error {
	if table == "" {
		return fmt.Errorf("table is required")
	}
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return fmt.Errorf("table %q is not a safe SQL identifier (letters, digits and _, optionally schema.table)", table)
	}
	for _, p := range parts {
		if !isIdentifier(p) {
			return fmt.Errorf("table %q is not a safe SQL identifier (letters, digits and _, optionally schema.table)", table)
		}
	}
	if schema := strings.ToLower(parts[0]); len(parts) == 2 && (strings.HasPrefix(schema, "pg_") || slices.Contains(systemSchemas, schema)) {
		return fmt.Errorf("table %q is in %s, a system schema: a binding names the customer's own tables", table, parts[0])
	}
	if len(parts) == 1 && strings.HasPrefix(strings.ToLower(table), "pg_") {
		return fmt.Errorf("table %q names a system catalog (Postgres looks a pg_ name up in pg_catalog first): qualify a table of the customer's own with its schema", table)
	}
	return nil
}

func isIdentifier(s string) bool {
	return len(s) <= MaxIdentifierLength && identifierPattern.MatchString(s)
}

// checkColumns checks a list of column names: safe identifiers, no repeats.
func checkColumns(field string, cols []string) error {
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		if !isIdentifier(c) {
			return fmt.Errorf("%s: column %q is not a safe SQL identifier (letters, digits and _, at most %d)", field, c, MaxIdentifierLength)
		}
		if seen[c] {
			return fmt.Errorf("%s: column %q is listed twice", field, c)
		}
		seen[c] = true
	}
	return nil
}

// checkFixed checks fixed_filters / fixed_values: identifier keys, scalar
// values, and strings that use session placeholders only, since a bundle
// must never be able to supply a fixed value.
func checkFixed(field string, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !isIdentifier(k) {
			return fmt.Errorf("%s: key %q is not a safe SQL identifier", field, k)
		}
		switch val := m[k].(type) {
		case nil, bool, json.Number, float64:
		case string:
			names, err := placeholders(val)
			if err != nil {
				return fmt.Errorf("%s %q: %w", field, k, err)
			}
			for _, n := range names {
				if !slices.Contains(SessionPlaceholders, n) {
					return fmt.Errorf("%s %q: {{%s}} is not a session placeholder; only %s may be used",
						field, k, n, placeholderList(SessionPlaceholders))
				}
			}
		default:
			return fmt.Errorf("%s %q must be a string, number, boolean or null", field, k)
		}
	}
	return nil
}

func (v *validator) httpCalls(s *Spec) error {
	for i := range s.HTTPCalls {
		h := &s.HTTPCalls[i]
		label := entryLabel("http_calls", i, h.Op)
		if err := v.declare(label, h.Op); err != nil {
			return err
		}
		if h.IntegrationID != "" {
			if _, err := v.lookupIntegration(label+": ", h.IntegrationID); err != nil {
				return err
			}
		}
		if err := checkCall(h); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
	}
	return nil
}

// checkCall checks one outbound request template (an http_call, or a rest
// read or write as the call it becomes) and upper-cases its method. Its
// integration is checked by the caller.
func checkCall(h *HTTPCall) error {
	method := strings.ToUpper(h.Method)
	if !slices.Contains(httpMethods, method) {
		return fmt.Errorf("method %q is not one of %s", h.Method, strings.Join(httpMethods, ", "))
	}
	h.Method = method
	if err := checkCallURL(h.URL); err != nil {
		return err
	}
	if err := checkAuth(h); err != nil {
		return err
	}
	if err := checkHeaders(h.Headers); err != nil {
		return err
	}
	if err := checkQuery(h.Query); err != nil {
		return err
	}
	if len(h.BodyTemplate) > 0 {
		var body any
		if err := strictjson.Unmarshal(h.BodyTemplate, &body); err != nil {
			return fmt.Errorf("body_template: %w", err)
		}
		if err := checkTemplateValue("body_template", body); err != nil {
			return err
		}
	}
	return nil
}

// checkAuth checks an http_call's auth. Secrets come from an integration, so
// every kind but none needs the call to name one.
func checkAuth(h *HTTPCall) error {
	if h.Auth == nil {
		return nil
	}
	a := h.Auth
	if !slices.Contains(authKinds, a.Kind) {
		return fmt.Errorf("auth.kind %q is not one of %s", a.Kind, strings.Join(authKinds, ", "))
	}
	if a.Kind != AuthNone && h.IntegrationID == "" {
		return fmt.Errorf("auth.kind %s reads its secrets from an integration: integration_id is required", a.Kind)
	}
	switch a.Kind {
	case AuthOAuth2Password, AuthClientCredentials:
		if a.TokenURL == "" {
			return fmt.Errorf("auth.token_url is required for auth.kind %s", a.Kind)
		}
		if err := checkLiteralURL(a.TokenURL); err != nil {
			return fmt.Errorf("auth.token_url %w", err)
		}
		if strings.Contains(a.Scope, "{{") {
			return fmt.Errorf("auth.scope may not hold placeholders: tokens are cached per scope")
		}
	default:
		if a.TokenURL != "" || a.Scope != "" {
			return fmt.Errorf("auth.token_url and auth.scope apply only to oauth2_password and client_credentials, not %s", a.Kind)
		}
	}
	return nil
}

func checkHeaders(headers map[string]string) error {
	for _, name := range sortedKeys(headers) {
		if !headerNamePattern.MatchString(name) {
			return fmt.Errorf("headers: %q is not a valid header name (placeholders are allowed in values only)", name)
		}
		if strings.EqualFold(name, "Host") {
			return fmt.Errorf("headers: Host may not be set; the url names the host")
		}
		if _, err := placeholders(headers[name]); err != nil {
			return fmt.Errorf("headers %q: %w", name, err)
		}
	}
	return nil
}

func checkQuery(query map[string]string) error {
	for _, name := range sortedKeys(query) {
		if name == "" || strings.Contains(name, "{{") {
			return fmt.Errorf("query: parameter name %q must be literal and non-empty (placeholders are allowed in values only)", name)
		}
		if _, err := placeholders(query[name]); err != nil {
			return fmt.Errorf("query %q: %w", name, err)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkTemplateValue checks every string of a body template, keys included,
// for well-formed placeholders.
func checkTemplateValue(path string, v any) error {
	switch x := v.(type) {
	case string:
		if _, err := placeholders(x); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case map[string]any:
		for k, e := range x {
			if _, err := placeholders(k); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if err := checkTemplateValue(path+"."+k, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkTemplateValue(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v *validator) tools(s *Spec) error {
	if len(s.Tools) == 0 {
		return nil
	}
	direct := strings.Join(basetool.Names(basetool.IsDirect), ", ")
	var names []string
	for _, t := range s.Tools {
		if t.Tool != "" && !isDirect(t.Tool) {
			names = append(names, t.Tool)
		}
	}
	byName := map[string][]ConfiguredTool{}
	if len(names) > 0 {
		rows, err := v.ws.ConfiguredTools(v.ctx, names)
		if err != nil {
			return err
		}
		for _, r := range rows {
			byName[r.DisplayName] = append(byName[r.DisplayName], r)
		}
	}
	for i := range s.Tools {
		t := &s.Tools[i]
		label := entryLabel("tools", i, t.Op)
		if err := v.declare(label, t.Op); err != nil {
			return err
		}
		if t.Tool == "" {
			return apperr.Invalidf("%s: tool is required: %s or a configured tool's display name", label, direct)
		}
		if err := checkParams(t.Params); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if isDirect(t.Tool) {
			continue
		}
		configured := byName[t.Tool]
		if len(configured) == 0 {
			if _, ok := basetool.Lookup(t.Tool); ok {
				return apperr.Invalidf("%s: tool %q needs configuring; name the display name of a configured %s (only %s is named directly)",
					label, t.Tool, t.Tool, direct)
			}
			return apperr.Invalidf("%s: unknown tool %q: name %s or the display name of a configured tool in this workspace",
				label, t.Tool, direct)
		}
		// Display names are unique per agent, not per workspace: the tool run
		// is the one of the session's agent, so every candidate must pass.
		for _, ct := range configured {
			if row, _ := basetool.Lookup(ct.BaseTool); !row.Runnable {
				return apperr.Invalidf("%s: configured tool %q is an %s, which cannot be run from a bundle", label, ct.DisplayName, ct.BaseTool)
			}
			// The same rule /run applies, with the same 403 (seed 000).
			if err := CheckParams(ct.BaseTool, t.Params); err != nil {
				_, _, msg := apperr.Public(err)
				return apperr.Forbiddenf("%s: %s (configured tool %q)", label, msg, ct.DisplayName)
			}
		}
	}
	return nil
}

// isDirect says whether a tools op naming name runs a base tool directly,
// with nothing configured.
func isDirect(name string) bool {
	t, ok := basetool.Lookup(name)
	return ok && t.Direct
}

func checkParams(params []string) error {
	seen := map[string]bool{}
	for j, p := range params {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("params[%d] is empty", j)
		}
		if seen[p] {
			return fmt.Errorf("params: %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func (v *validator) actions(s *Spec) error {
	writes := map[string]bool{}
	for _, w := range s.Writes {
		writes[w.Op] = true
	}
	calls := map[string]bool{}
	for _, h := range s.HTTPCalls {
		calls[h.Op] = true
	}
	names := map[string]string{}
	for i := range s.Actions {
		a := &s.Actions[i]
		label := entryLabel("actions", i, a.Name)
		if a.Name == "" {
			return apperr.Invalidf("%s: name is required", label)
		}
		if err := checkOpName(a.Name); err != nil {
			return apperr.Invalidf("%s: name %s", label, err)
		}
		if first, ok := names[a.Name]; ok {
			return apperr.Invalidf("%s: action name %q is already declared by %s", label, a.Name, first)
		}
		names[a.Name] = label
		if len(a.Writes) == 0 && len(a.HTTPCalls) == 0 && !a.ResolvesAwait {
			return apperr.Invalidf("%s: the action has nothing to do: name writes or http_calls, or set resolves_await", label)
		}
		if v.kind == KindREST && len(a.Writes) > 0 {
			return apperr.Invalidf("%s: an action of a rest binding names http_calls only: a rest write cannot be rolled back when a later call fails", label)
		}
		if err := checkRefs(a.Writes, writes, "write"); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if err := checkRefs(a.HTTPCalls, calls, "http_call"); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
		if a.FeedEvent != "" {
			if err := checkOpName(a.FeedEvent); err != nil {
				return apperr.Invalidf("%s: feed_event %s", label, err)
			}
		}
		if err := checkOutcome(a); err != nil {
			return apperr.Invalidf("%s: %s", label, err)
		}
	}
	return nil
}

// outcomeLabel is a custom outcome: a lowercase name.
var outcomeLabel = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// checkOutcome checks an action's outcome and reason_required: both say
// what resolving the await decides, so both need resolves_await.
func checkOutcome(a *Action) error {
	if (a.Outcome != "" || a.ReasonRequired) && !a.ResolvesAwait {
		return fmt.Errorf("outcome and reason_required describe resolving the await: set resolves_await")
	}
	if a.Outcome != "" && !outcomeLabel.MatchString(a.Outcome) {
		return fmt.Errorf("outcome %q must be approve, edit, reject or a custom label (a lowercase letter, then up to 63 lowercase letters, digits or _)", a.Outcome)
	}
	return nil
}

// checkRefs checks an action's list of writes or http_calls: each names a
// declared op of that kind, once (an action's payload carries one row per write).
func checkRefs(refs []string, declared map[string]bool, kind string) error {
	seen := map[string]bool{}
	for _, r := range refs {
		if !declared[r] {
			return fmt.Errorf("names unknown %s %q", kind, r)
		}
		if seen[r] {
			return fmt.Errorf("names %s %q twice", kind, r)
		}
		seen[r] = true
	}
	return nil
}

func (v *validator) capabilities(s *Spec) error {
	seen := map[string]bool{}
	for i, name := range s.Capabilities {
		if _, ok := LookupCapability(name); !ok {
			known := make([]string, len(Catalog))
			for j, c := range Catalog {
				known[j] = c.Name
			}
			return apperr.Invalidf("%s: unknown capability (known: %s)", entryLabel("capabilities", i, name), strings.Join(known, ", "))
		}
		if seen[name] {
			return apperr.Invalidf("%s: capability is listed twice", entryLabel("capabilities", i, name))
		}
		seen[name] = true
	}
	return nil
}
