package bundle

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxGrantOrigins bounds each list of a declaration: a bundle that needs
// more origins than this is better served by the bundle origin itself.
const MaxGrantOrigins = 20

// The names of a declaration's lists, as the MCP Apps CSP metadata
// (SEP-1865 `_meta.ui.csp`) and the admin API spell them.
const (
	ListConnect  = "connectDomains"
	ListResource = "resourceDomains"
	ListFrame    = "frameDomains"
)

// Grants is the network access a bundle version declares, in the MCP Apps
// shape: origins it fetches from (connect-src), loads scripts, styles,
// images and fonts from (resource) and frames (frame-src). Each entry is an
// https origin, https://host[:port]
// (docs/bundle-authors.md#declaring-network-grants).
type Grants struct {
	ConnectDomains  []string `json:"connectDomains"`
	ResourceDomains []string `json:"resourceDomains"`
	FrameDomains    []string `json:"frameDomains"`
}

// Empty reports whether g declares nothing.
func (g Grants) Empty() bool {
	return len(g.ConnectDomains) == 0 && len(g.ResourceDomains) == 0 && len(g.FrameDomains) == 0
}

// Grant is a version's declaration and the admin's decision on it, as the
// admin API and the console show it.
type Grant struct {
	Grants
	// State is pending, approved, refused or withdrawn (models.Grant*).
	State     string     `json:"state"`
	DecidedBy *string    `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// CheckGrants checks a declaration and returns it canonical: each origin
// lower-cased, without a default port, once per list. allow is the
// deployment's OutboundAllow: a literal address is refused when the
// outbound guard would refuse to dial it (private, loopback, link-local and
// other special-purpose ranges, cloud metadata addresses), unless allow
// lets it through. Names are never resolved here, but names that only
// exist inside a network (localhost, *.local, *.internal, dotless names)
// are refused outright. A refusal is an invalid error naming the list and
// the entry.
func CheckGrants(g Grants, allow []netip.Prefix) (Grants, error) {
	out := Grants{ConnectDomains: []string{}, ResourceDomains: []string{}, FrameDomains: []string{}}
	for _, l := range []struct {
		name string
		in   []string
		out  *[]string
	}{
		{ListConnect, g.ConnectDomains, &out.ConnectDomains},
		{ListResource, g.ResourceDomains, &out.ResourceDomains},
		{ListFrame, g.FrameDomains, &out.FrameDomains},
	} {
		if len(l.in) > MaxGrantOrigins {
			return Grants{}, apperr.Invalidf("%s lists %d origins; a list holds at most %d", l.name, len(l.in), MaxGrantOrigins)
		}
		seen := map[string]bool{}
		for _, entry := range l.in {
			o, err := checkOrigin(entry, allow)
			if err != nil {
				return Grants{}, apperr.Invalidf("%s: %q is refused: %s", l.name, entry, err.Error())
			}
			if !seen[o] {
				seen[o] = true
				*l.out = append(*l.out, o)
			}
		}
	}
	return out, nil
}

// internalSuffixes are name suffixes that only resolve inside a network.
var internalSuffixes = []string{".localhost", ".local", ".internal", ".localdomain", ".home.arpa"}

// checkOrigin returns entry as a canonical https origin, or why it is not one.
func checkOrigin(entry string, allow []netip.Prefix) (string, error) {
	raw := strings.TrimSpace(entry)
	if raw == "" {
		return "", errors.New("an origin is https://host[:port]")
	}
	if strings.Contains(raw, "*") {
		return "", errors.New("wildcards are not allowed; list each origin")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", errors.New("not an origin: write https://host[:port]")
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return "", errors.New("only https origins are allowed")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return "", errors.New("an origin has no user, path, query or fragment: write https://host[:port]")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", errors.New("the port is not a number from 1 to 65535")
		}
		if n == 443 {
			port = ""
		} else {
			port = strconv.Itoa(n)
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return "", errors.New("an address with a zone is not an origin")
		}
		if err := gateway.CheckAddr(addr, allow); err != nil {
			return "", errors.New("the address is loopback, private or otherwise special-purpose, and OUTBOUND_ALLOW_CIDRS does not allow it")
		}
		if addr.Is6() {
			host = "[" + addr.String() + "]"
		}
	} else if err := checkHostName(host); err != nil {
		return "", err
	}
	if port != "" {
		return "https://" + host + ":" + port, nil
	}
	return "https://" + host, nil
}

// checkHostName refuses names that are not public DNS names.
func checkHostName(host string) error {
	if host == "localhost" || !strings.Contains(host, ".") {
		return errors.New("a name without a dot (or localhost) only resolves inside a network")
	}
	for _, suffix := range internalSuffixes {
		if strings.HasSuffix(host, suffix) {
			return fmt.Errorf("names under %s only resolve inside a network", suffix)
		}
	}
	if strings.HasSuffix(host, ".") || len(host) > 253 {
		return errors.New("not a host name")
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return errors.New("not a host name")
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return errors.New("not a host name (an international name is written in its xn-- form)")
			}
		}
	}
	return nil
}

// grantOf is the view of a stored grant.
func grantOf(row models.BundleGrant) (Grant, error) {
	g := Grant{State: row.State, DecidedBy: row.DecidedBy, DecidedAt: row.DecidedAt}
	for _, l := range []struct {
		raw models.JSON
		out *[]string
	}{{row.ConnectDomains, &g.ConnectDomains}, {row.ResourceDomains, &g.ResourceDomains}, {row.FrameDomains, &g.FrameDomains}} {
		if err := l.raw.Decode(l.out); err != nil {
			return Grant{}, fmt.Errorf("bundle: read grant of %s v%d: %w", row.BundleID, row.Version, err)
		}
	}
	return g, nil
}

// grantRow is the pending row of a version's declaration; g is canonical
// (CheckGrants), its lists never nil.
func grantRow(b models.Bundle, g Grants) models.BundleGrant {
	return models.BundleGrant{
		BundleID: b.ID, Version: b.Version, State: models.GrantPending, CreatedAt: b.CreatedAt,
		ConnectDomains: models.MustJSON(g.ConnectDomains), ResourceDomains: models.MustJSON(g.ResourceDomains),
		FrameDomains: models.MustJSON(g.FrameDomains),
	}
}

// The decisions an admin takes on a declaration
// (docs/admins.md#approving-network-grants).
const (
	DecisionApprove  = "approve"
	DecisionRefuse   = "refuse"
	DecisionWithdraw = "withdraw"
)

// decisions maps a decision to the state it moves from and the one it sets.
var decisions = map[string]struct{ from, to string }{
	DecisionApprove:  {models.GrantPending, models.GrantApproved},
	DecisionRefuse:   {models.GrantPending, models.GrantRefused},
	DecisionWithdraw: {models.GrantApproved, models.GrantWithdrawn},
}

// Decide approves or refuses a version's pending declaration, or withdraws
// its approval, and audits it as bundle.grant.<decision>. Deciding a
// declaration that is not in the state the decision starts from (approving
// a refused one, refusing twice, withdrawing a pending one) is a conflict:
// a new declaration comes with a new version.
func (s *Service) Decide(ctx context.Context, workspaceID, actor, bundleID string, version int, decision string) (Grant, error) {
	step, ok := decisions[decision]
	if !ok {
		return Grant{}, apperr.NotFoundf("no decision %q: approve, refuse or withdraw", decision)
	}
	var out Grant
	err := s.st.Tx(ctx, func(tx *gorm.DB) error {
		var b models.Bundle
		err := tx.WithContext(ctx).Where("id = ? AND workspace_id = ? AND version = ?", bundleID, workspaceID, version).Take(&b).Error
		if err != nil {
			return store.NotFound(err, "bundle: decide grant", "bundle version")
		}
		var row models.BundleGrant
		err = tx.WithContext(ctx).Where("bundle_id = ? AND version = ?", bundleID, version).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return apperr.NotFoundf("version %d of bundle %s declares no network grants", version, bundleID)
		}
		if err != nil {
			return fmt.Errorf("bundle: read grant: %w", err)
		}
		if row.State != step.from {
			return apperr.Conflictf("the network grants of v%d are %s; only %s grants can be %s", version, row.State, step.from, pastTense(decision))
		}
		now := time.Now().UTC()
		res := tx.WithContext(ctx).Model(&models.BundleGrant{}).
			Where("bundle_id = ? AND version = ? AND state = ?", bundleID, version, step.from).
			Updates(map[string]any{"state": step.to, "decided_by": actor, "decided_at": now})
		if res.Error != nil {
			return fmt.Errorf("bundle: decide grant: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return apperr.Conflictf("the network grants of v%d were decided at the same time; reload the page", version)
		}
		row.State, row.DecidedBy, row.DecidedAt = step.to, &actor, &now
		if out, err = grantOf(row); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: "bundle.grant." + decision, TargetType: "bundle", TargetID: bundleID,
			Detail: map[string]any{"version": version, "state": step.to, ListConnect: out.ConnectDomains,
				ListResource: out.ResourceDomains, ListFrame: out.FrameDomains},
		})
	})
	return out, err
}

// pastTense names what a decision does to a declaration, for messages.
func pastTense(decision string) string {
	switch decision {
	case DecisionApprove:
		return "approved"
	case DecisionRefuse:
		return "refused"
	}
	return "withdrawn"
}

// grantsOf returns the stored grants of a bundle's versions by version.
func grantsOf(ctx context.Context, db *gorm.DB, bundleID string) (map[int]Grant, error) {
	var rows []models.BundleGrant
	if err := db.WithContext(ctx).Where("bundle_id = ?", bundleID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("bundle: grants: %w", err)
	}
	out := make(map[int]Grant, len(rows))
	for _, row := range rows {
		g, err := grantOf(row)
		if err != nil {
			return nil, err
		}
		out[row.Version] = g
	}
	return out, nil
}

// SplitOrigins reads a list of origins written in one field, separated by
// commas, spaces or line breaks (a query parameter, a console text box).
func SplitOrigins(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}
