package bundle_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// testAllow is the test deployments' OUTBOUND_ALLOW_CIDRS.
var testAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func TestCheckGrantsAcceptsHTTPSOriginsAndCanonicalisesThem(t *testing.T) {
	t.Parallel()
	got, err := bundle.CheckGrants(bundle.Grants{
		ConnectDomains:  []string{"https://API.Example.com", "https://api.example.com:443/", " https://api.example.com "},
		ResourceDomains: []string{"https://cdn.jsdelivr.net", "https://fonts.example.org:8443", "https://127.0.0.1:9443"},
		FrameDomains:    []string{"https://xn--bcher-kva.example", "https://[2606:4700::1111]"},
	}, testAllow)
	require.NoError(t, err)
	require.Equal(t, bundle.Grants{
		ConnectDomains:  []string{"https://api.example.com"},
		ResourceDomains: []string{"https://cdn.jsdelivr.net", "https://fonts.example.org:8443", "https://127.0.0.1:9443"},
		FrameDomains:    []string{"https://xn--bcher-kva.example", "https://[2606:4700::1111]"},
	}, got)
}

func TestCheckGrantsRefusesWhatIsNotAPublicHTTPSOrigin(t *testing.T) {
	t.Parallel()
	many := make([]string, bundle.MaxGrantOrigins+1)
	for i := range many {
		many[i] = "https://cdn.example.com:" + string(rune('1'+i%9)) + "00" + string(rune('0'+i/9))
	}
	for _, tc := range []struct {
		name   string
		grants bundle.Grants
		allow  []netip.Prefix
		want   string
	}{
		{"http", bundle.Grants{ConnectDomains: []string{"http://api.example.com"}}, nil, `connectDomains: "http://api.example.com" is refused: only https`},
		{"wildcard", bundle.Grants{ResourceDomains: []string{"https://*.example.com"}}, nil, `resourceDomains: "https://*.example.com" is refused: wildcards`},
		{"bare star", bundle.Grants{FrameDomains: []string{"*"}}, nil, `frameDomains: "*" is refused: wildcards`},
		{"no scheme", bundle.Grants{ConnectDomains: []string{"api.example.com"}}, nil, `connectDomains: "api.example.com" is refused`},
		{"path", bundle.Grants{ConnectDomains: []string{"https://api.example.com/v1"}}, nil, `no user, path, query or fragment`},
		{"query", bundle.Grants{ConnectDomains: []string{"https://api.example.com?x=1"}}, nil, `no user, path, query or fragment`},
		{"fragment", bundle.Grants{ConnectDomains: []string{"https://api.example.com#x"}}, nil, `no user, path, query or fragment`},
		{"user", bundle.Grants{ConnectDomains: []string{"https://me@api.example.com"}}, nil, `no user, path, query or fragment`},
		{"directive smuggled", bundle.Grants{ConnectDomains: []string{"https://a.example.com;script-src"}}, nil, `connectDomains: "https://a.example.com;script-src" is refused`},
		{"bad port", bundle.Grants{ConnectDomains: []string{"https://api.example.com:99999"}}, nil, `port`},
		{"localhost", bundle.Grants{ConnectDomains: []string{"https://localhost:8443"}}, testAllow, `localhost`},
		{"sub.localhost", bundle.Grants{ConnectDomains: []string{"https://app.localhost"}}, nil, `.localhost`},
		{"dotless", bundle.Grants{ResourceDomains: []string{"https://intranet"}}, nil, `without a dot`},
		{".local", bundle.Grants{ResourceDomains: []string{"https://printer.local"}}, nil, `.local only`},
		{".internal", bundle.Grants{FrameDomains: []string{"https://metadata.google.internal"}}, nil, `.internal only`},
		{"trailing dot", bundle.Grants{FrameDomains: []string{"https://example.com."}}, nil, `not a host name`},
		{"unicode name", bundle.Grants{FrameDomains: []string{"https://bücher.example"}}, nil, `xn--`},
		{"loopback not allowed", bundle.Grants{ConnectDomains: []string{"https://127.0.0.1"}}, nil, `OUTBOUND_ALLOW_CIDRS does not allow it`},
		{"private", bundle.Grants{ConnectDomains: []string{"https://10.1.2.3"}}, testAllow, `OUTBOUND_ALLOW_CIDRS does not allow it`},
		{"link-local", bundle.Grants{ConnectDomains: []string{"https://169.254.10.1"}}, testAllow, `OUTBOUND_ALLOW_CIDRS`},
		{"metadata inside an allowed prefix", bundle.Grants{ConnectDomains: []string{"https://169.254.169.254"}},
			[]netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, `OUTBOUND_ALLOW_CIDRS`},
		{"ipv6 loopback", bundle.Grants{ConnectDomains: []string{"https://[::1]"}}, testAllow, `OUTBOUND_ALLOW_CIDRS`},
		{"ipv4-mapped loopback", bundle.Grants{ConnectDomains: []string{"https://[::ffff:10.0.0.1]"}}, testAllow, `OUTBOUND_ALLOW_CIDRS`},
		{"empty entry", bundle.Grants{ConnectDomains: []string{"  "}}, nil, `connectDomains: "  " is refused`},
		{"too many", bundle.Grants{ResourceDomains: many}, nil, `resourceDomains lists 21 origins; a list holds at most 20`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := bundle.CheckGrants(tc.grants, tc.allow)
			require.Error(t, err)
			require.True(t, apperr.Is(err, apperr.Invalid), "a 400: %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestContentSecurityPolicyWithGrantsAddsExactlyTheOrigins(t *testing.T) {
	t.Parallel()
	got := bundle.ContentSecurityPolicyWith("https://api.example.com/", "https://bundles.example.net/b", bundle.Grants{
		ConnectDomains:  []string{"https://data.example.org"},
		ResourceDomains: []string{"https://cdn.example.org", "https://fonts.example.org"},
		FrameDomains:    []string{"https://widget.example.org"},
	})
	res := " https://cdn.example.org https://fonts.example.org"
	require.Equal(t, "default-src 'none'; "+
		"script-src 'self' https://bundles.example.net 'unsafe-inline' https://api.example.com/sdk/"+res+"; "+
		"style-src 'self' https://bundles.example.net 'unsafe-inline'"+res+"; "+
		"img-src 'self' https://bundles.example.net data: blob:"+res+"; "+
		"font-src 'self' https://bundles.example.net"+res+"; "+
		"connect-src https://api.example.com/api/app-runtime/ https://data.example.org; "+
		"frame-src https://widget.example.org; child-src 'none'; worker-src 'none'; object-src 'none'; media-src 'none'; manifest-src 'none'; "+
		"base-uri 'none'; form-action 'none'; sandbox allow-scripts", got)
	require.Equal(t, bundle.ContentSecurityPolicy("https://api.example.com/", "https://bundles.example.net/b"),
		bundle.ContentSecurityPolicyWith("https://api.example.com/", "https://bundles.example.net/b", bundle.Grants{}))
}

// newService is a bundle service on st with database blobs and the test policy.
func newService(st *store.Store) *bundle.Service {
	return bundle.NewService(bundle.Options{
		Store: st, Blobs: storage.NewDatabase(st.DB), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		BundleBaseURL: "https://bundles.example.net/b", PublicAPIURL: "https://api.example.com", Allow: testAllow,
	})
}

// TestGrantsAreDeclaredPerVersionAndDecidedOnce walks a declaration through
// its states on both dialects: pending serves the default policy, approved
// the widened one, a new version's declaration is pending again, re-deciding
// is a conflict, and every decision is audited.
func TestGrantsAreDeclaredPerVersionAndDecidedOnce(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		ws, actor := tn.Workspace.ID, "user:"+tn.Admin.ID
		svc := newService(st)
		html := []byte("<!doctype html><p>hi</p>")
		grants := bundle.Grants{ConnectDomains: []string{"https://Data.example.org"}, ResourceDomains: []string{"https://cdn.example.org"}}

		_, err := svc.Create(ctx, ws, actor, bundle.Upload{Name: "bad", ContentType: "text/html", Content: html,
			Grants: bundle.Grants{FrameDomains: []string{"http://widget.example.org"}}})
		require.ErrorContains(t, err, `frameDomains: "http://widget.example.org" is refused`)
		var n int64
		require.NoError(t, st.DB.Model(&models.Bundle{}).Where("workspace_id = ?", ws).Count(&n).Error)
		require.Zero(t, n, "a refused declaration stores nothing")

		v1, err := svc.Create(ctx, ws, actor, bundle.Upload{Name: "charts", ContentType: "text/html", Content: html, Grants: grants})
		require.NoError(t, err)
		require.NotNil(t, v1.Grant)
		require.Equal(t, models.GrantPending, v1.Grant.State)
		require.Equal(t, []string{"https://data.example.org"}, v1.Grant.ConnectDomains, "stored canonical")

		served, err := svc.Open(ctx, v1.ID, 1)
		require.NoError(t, err)
		require.Equal(t, bundle.ContentSecurityPolicy("https://api.example.com", "https://bundles.example.net/b"), served.CSP, "pending: the default policy")
		pendingTag := served.ETag()
		require.NotEqual(t, bundle.ETag(served.Bundle), pendingTag)
		require.Contains(t, headerOf(svc.Headers(served), "Cache-Control"), "no-cache")

		g, err := svc.Decide(ctx, ws, actor, v1.ID, 1, bundle.DecisionApprove)
		require.NoError(t, err)
		require.Equal(t, models.GrantApproved, g.State)
		require.Equal(t, actor, *g.DecidedBy)
		served, err = svc.Open(ctx, v1.ID, 1)
		require.NoError(t, err)
		require.Contains(t, served.CSP, "connect-src https://api.example.com/api/app-runtime/ https://data.example.org;")
		require.Contains(t, served.CSP, "img-src 'self' https://bundles.example.net data: blob: https://cdn.example.org;")
		require.Contains(t, served.CSP, "frame-src 'none'")
		require.NotEqual(t, pendingTag, served.ETag(), "the ETag changes with the policy")

		_, err = svc.Decide(ctx, ws, actor, v1.ID, 1, bundle.DecisionApprove)
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
		require.ErrorContains(t, err, "the network grants of v1 are approved; only pending grants can be approved")
		_, err = svc.Decide(ctx, ws, actor, v1.ID, 1, bundle.DecisionRefuse)
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)

		v2, err := svc.AddVersion(ctx, ws, actor, v1.ID, bundle.Upload{ContentType: "text/html", Content: html, Grants: grants})
		require.NoError(t, err)
		require.Equal(t, models.GrantPending, v2.Grant.State, "a new version's declaration needs its own approval")
		served, err = svc.Open(ctx, v1.ID, 2)
		require.NoError(t, err)
		require.NotContains(t, served.CSP, "data.example.org")

		_, err = svc.Decide(ctx, ws, actor, v1.ID, 2, bundle.DecisionWithdraw)
		require.True(t, apperr.Is(err, apperr.Conflict), "a pending declaration is refused, not withdrawn: %v", err)
		_, err = svc.Decide(ctx, ws, actor, v1.ID, 2, bundle.DecisionRefuse)
		require.NoError(t, err)
		_, err = svc.Decide(ctx, ws, actor, v1.ID, 1, bundle.DecisionWithdraw)
		require.NoError(t, err)
		served, err = svc.Open(ctx, v1.ID, 1)
		require.NoError(t, err)
		require.NotContains(t, served.CSP, "data.example.org", "withdrawn: the default policy again")

		v3, err := svc.AddVersion(ctx, ws, actor, v1.ID, bundle.Upload{ContentType: "text/html", Content: html})
		require.NoError(t, err)
		require.Nil(t, v3.Grant)
		_, err = svc.Decide(ctx, ws, actor, v1.ID, 3, bundle.DecisionApprove)
		require.True(t, apperr.Is(err, apperr.NotFound), "v3 declares nothing: %v", err)
		served, err = svc.Open(ctx, v1.ID, 3)
		require.NoError(t, err)
		require.Equal(t, bundle.CacheControl, headerOf(svc.Headers(served), "Cache-Control"), "no declaration: immutable as before")
		require.Equal(t, bundle.ETag(served.Bundle), served.ETag())

		other := testkit.NewTenant(t, st.DB)
		_, err = svc.Decide(ctx, other.Workspace.ID, "user:"+other.Admin.ID, v1.ID, 2, bundle.DecisionApprove)
		require.True(t, apperr.Is(err, apperr.NotFound), "another workspace's bundle: %v", err)

		d, err := svc.Get(ctx, ws, v1.ID)
		require.NoError(t, err)
		states := []string{}
		for _, v := range d.Versions {
			if v.Grant != nil {
				states = append(states, v.Grant.State)
			}
		}
		require.Equal(t, []string{models.GrantWithdrawn, models.GrantRefused}, states)
		for action, want := range map[string]int64{"bundle.grant.approve": 1, "bundle.grant.refuse": 1, "bundle.grant.withdraw": 1} {
			require.NoError(t, st.DB.Model(&models.AuditEntry{}).Where("workspace_id = ? AND action = ?", ws, action).Count(&n).Error)
			require.Equal(t, want, n, action)
		}

		require.NoError(t, svc.Delete(ctx, ws, actor, v1.ID))
		require.NoError(t, st.DB.Model(&models.BundleGrant{}).Where("bundle_id = ?", v1.ID).Count(&n).Error)
		require.Zero(t, n, "a deleted bundle's grants go with it")
	})
}

func headerOf(headers [][2]string, name string) string {
	for _, h := range headers {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

// FuzzCheckGrants checks that whatever CheckGrants accepts is a canonical
// https origin that cannot add a source or a directive to the policy it is
// pasted into, and that checking it again changes nothing.
func FuzzCheckGrants(f *testing.F) {
	for _, seed := range []string{"https://cdn.example.com", "https://A.example:443/", "https://[2606:4700::1111]:8443",
		"https://127.0.0.1:9443", "https://a.example.com;script-src *", "https://a.example.com 'unsafe-eval'", "https://a.example.com,https://b.example"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		got, err := bundle.CheckGrants(bundle.Grants{ConnectDomains: []string{entry}}, testAllow)
		if err != nil {
			require.True(t, apperr.Is(err, apperr.Invalid), "a refusal is a 400: %v", err)
			return
		}
		require.Len(t, got.ConnectDomains, 1)
		o := got.ConnectDomains[0]
		require.True(t, strings.HasPrefix(o, "https://"), o)
		require.False(t, strings.ContainsAny(o[len("https://"):], " \t\r\n;,'\"*/?#@\\"), "%q carries a separator", o)
		again, err := bundle.CheckGrants(got, testAllow)
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}
