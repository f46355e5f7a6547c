package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/models"
)

// Secrets is what the gateway reads of an integration's sealed secrets
// document (the admin API's "secrets" object; other keys, such as a data
// source's dsn, are ignored).
type Secrets struct {
	// BearerToken is sent as "Authorization: Bearer …" by auth.kind bearer.
	BearerToken string `json:"bearer_token,omitempty"`
	// OAuth is the oauth_config of the oauth2_password and
	// client_credentials kinds, kept raw: its hash is the credential version
	// a cached token belongs to.
	OAuth json.RawMessage `json:"oauth_config,omitempty"`
}

// OAuthConfig is an integration's oauth_config secret.
type OAuthConfig struct {
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	Username     string `json:"username,omitempty"` // oauth2_password
	Password     string `json:"password,omitempty"` // oauth2_password
	// Scope is used when the http_call's auth.scope is empty.
	Scope string `json:"scope,omitempty"`
	// AuthStyle is how the client authenticates to the token endpoint:
	// "header" (HTTP Basic, the default when there is a client_id) or
	// "params" (client_id and client_secret in the form; the default without
	// a client_id).
	AuthStyle string `json:"auth_style,omitempty"`
}

// credentials is how one call authenticates: nothing, a static bearer, or an
// OAuth2 grant whose token the cache holds under key.
type credentials struct {
	bearer string
	key    tokenKey
	grant  func(ctx context.Context) (*oauth2.Token, error) // nil: no OAuth2
}

// credentialsFor reads the secrets the call's auth kind needs from integ.
func (g *Gateway) credentialsFor(call *bindingspec.HTTPCall, integ *models.Integration) (credentials, error) {
	kind := bindingspec.AuthNone
	if call.Auth != nil && call.Auth.Kind != "" {
		kind = call.Auth.Kind
	}
	if kind == bindingspec.AuthNone {
		return credentials{}, nil
	}
	if integ == nil {
		return credentials{}, apperr.New(apperr.BadGateway, "http_call %q: auth.kind %s needs an integration", call.Op, kind)
	}
	if g.secrets == nil {
		return credentials{}, apperr.New(apperr.Internal, "no SECRETS_KEY to open the secrets of integration %q", integ.Name)
	}
	var s Secrets
	if err := g.secrets.OpenJSON(integ.SecretsEnc, &s); err != nil {
		return credentials{}, apperr.Wrap(err, apperr.Internal, "open the secrets of integration %q", integ.Name)
	}
	switch kind {
	case bindingspec.AuthBearer:
		if s.BearerToken == "" {
			return credentials{}, apperr.New(apperr.BadGateway, "integration %q has no bearer_token secret", integ.Name)
		}
		return credentials{bearer: s.BearerToken}, nil
	case bindingspec.AuthOAuth2Password, bindingspec.AuthClientCredentials:
		return oauthCredentials(call, integ, kind, s.OAuth)
	}
	return credentials{}, apperr.New(apperr.Internal, "http_call %q: unknown auth.kind %q", call.Op, kind)
}

func oauthCredentials(call *bindingspec.HTTPCall, integ *models.Integration, kind string, raw json.RawMessage) (credentials, error) {
	var oc OAuthConfig
	if len(raw) == 0 || json.Unmarshal(raw, &oc) != nil {
		return credentials{}, apperr.New(apperr.BadGateway, "integration %q has no oauth_config secret (an object) for auth.kind %s", integ.Name, kind)
	}
	scope := call.Auth.Scope
	if scope == "" {
		scope = oc.Scope
	}
	style := oauth2.AuthStyleInHeader
	if oc.AuthStyle == "params" || (oc.AuthStyle == "" && oc.ClientID == "") {
		style = oauth2.AuthStyleInParams
	}
	endpoint := oauth2.Endpoint{TokenURL: call.Auth.TokenURL, AuthStyle: style}
	version := sha256.Sum256(append([]byte(kind+"\x00"), raw...))
	c := credentials{key: tokenKey{
		integration: integ.ID, tokenURL: call.Auth.TokenURL, scope: scope, credential: hex.EncodeToString(version[:8]),
	}}
	switch kind {
	case bindingspec.AuthClientCredentials:
		if oc.ClientID == "" || oc.ClientSecret == "" {
			return credentials{}, apperr.New(apperr.BadGateway, "integration %q: oauth_config needs client_id and client_secret for client_credentials", integ.Name)
		}
		cc := clientcredentials.Config{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret,
			TokenURL: endpoint.TokenURL, AuthStyle: style, Scopes: strings.Fields(scope)}
		c.grant = cc.Token
	default:
		if oc.Username == "" || oc.Password == "" {
			return credentials{}, apperr.New(apperr.BadGateway, "integration %q: oauth_config needs username and password for oauth2_password", integ.Name)
		}
		pc := oauth2.Config{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, Endpoint: endpoint, Scopes: strings.Fields(scope)}
		c.grant = func(ctx context.Context) (*oauth2.Token, error) {
			return pc.PasswordCredentialsToken(ctx, oc.Username, oc.Password)
		}
	}
	return c, nil
}

// tokenError turns a failed grant into the caller's error: 403 when the
// guard refused the token URL's address, else 502. Neither quotes the token
// endpoint; the caller logs the cause.
func tokenError(call *bindingspec.HTTPCall, err error) error {
	if IsBlocked(err) {
		return apperr.Wrap(errBlocked, apperr.Forbidden, "http_call %q: the token URL resolves to a refused address", call.Op)
	}
	return apperr.Wrap(errTokenFetch, apperr.BadGateway, "http_call %q: could not obtain a token from the token URL", call.Op)
}

// tokenDetail is what is logged of a failed grant: the token endpoint's
// status and (clipped) words when it answered.
func tokenDetail(err error) []any {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return []any{"token_status", re.Response.StatusCode, "token_error", re.ErrorCode, "token_body", clipBytes(re.Body, maxLoggedBody)}
	}
	return []any{"error", err.Error()}
}

// setAuth sets the call's credentials on req.
func (c credentials) setAuth(req *http.Request, tok *oauth2.Token) {
	switch {
	case tok != nil:
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	case c.bearer != "":
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
}
