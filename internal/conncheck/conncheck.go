// Package conncheck tests an integration's connection the way its real
// calls make it (the console's "test connection"): a Postgres DSN through
// the data sources' guard (the platform's own server and privileged roles
// refused), a SQL Server DSN through the same SSRF guard, a REST or
// component base URL through the gateway's guarded client, a dev SQLite
// file against the files the data sources open. Every failure is an
// apperr error whose message says, in the product's words, what failed;
// none quotes a secret.
package conncheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/mssql"
)

// Timeout bounds one test: a server that has not answered by then is
// reported as not answering.
const Timeout = 10 * time.Second

// Checker tests connections.
type Checker struct {
	// Guard is the data sources' guard (datasource.Registry.Guard): what
	// Postgres and SQL Server connections may reach.
	Guard datasource.Guard
	// HTTP is an SSRF-guarded client (gateway.NewClient) for REST and
	// component base URLs.
	HTTP *http.Client
	// CheckSQLiteFunc refuses a dev SQLite file the data sources would not
	// open (datasource.Registry.CheckSQLite).
	CheckSQLiteFunc func(dsn string) error
}

// Check tests an integration of kind with baseURL and its opened secrets.
// It returns what it reached, in words, or why it failed: invalid (400) for
// what the platform refuses whatever the server does, bad_gateway (502) for
// a server that could not be reached or refused the credentials.
func (c Checker) Check(ctx context.Context, kind, baseURL string, secrets map[string]json.RawMessage) (string, error) {
	switch kind {
	case admin.KindPostgres:
		dsn, err := dsnOf(kind, secrets)
		if err != nil {
			return "", err
		}
		if err := c.Guard.TestPostgres(ctx, dsn); err != nil {
			return "", err
		}
		return "Connected: the server is not the platform's own and the role is a plain login role.", nil
	case admin.KindMSSQL:
		dsn, err := dsnOf(kind, secrets)
		if err != nil {
			return "", err
		}
		if err := mssql.TestConnection(ctx, c.Guard, dsn, Timeout); err != nil {
			return "", err
		}
		return "Connected: the server accepted the login.", nil
	case admin.KindSQLite:
		dsn, err := dsnOf(kind, secrets)
		if err != nil {
			return "", err
		}
		if c.CheckSQLiteFunc == nil {
			return "", apperr.Invalidf("kind sqlite is for the embedded dev mode only")
		}
		if err := c.CheckSQLiteFunc(dsn); err != nil {
			return "", err
		}
		return "The file is the dev demo's data source, which the data sources open.", nil
	case admin.KindREST:
		if err := checkRESTSecrets(secrets); err != nil {
			return "", err
		}
		return c.reach(ctx, baseURL)
	case admin.KindComponent:
		return c.reach(ctx, baseURL)
	}
	return "", apperr.Invalidf("kind %q has no connection to test", kind)
}

// dsnOf reads secrets.dsn.
func dsnOf(kind string, secrets map[string]json.RawMessage) (string, error) {
	var dsn string
	if err := json.Unmarshal(secrets["dsn"], &dsn); err != nil || strings.TrimSpace(dsn) == "" {
		return "", apperr.Invalidf("secrets.dsn (a string) is required for a %s integration", kind)
	}
	return dsn, nil
}

// checkRESTSecrets checks the credentials a REST integration holds for the
// http_calls' auth kinds: bearer_token a string, oauth_config an object with
// a client_id and client_secret (client_credentials) or a username and
// password (oauth2_password). A grant itself needs the call's token URL, so
// it is tried by the first call that uses it.
func checkRESTSecrets(secrets map[string]json.RawMessage) error {
	if raw, ok := secrets["bearer_token"]; ok {
		var token string
		if json.Unmarshal(raw, &token) != nil || token == "" {
			return apperr.Invalidf("secrets.bearer_token must be a non-empty string (auth.kind bearer sends it)")
		}
	}
	if raw, ok := secrets["oauth_config"]; ok {
		var oc gateway.OAuthConfig
		if json.Unmarshal(raw, &oc) != nil {
			return apperr.Invalidf("secrets.oauth_config must be an object of client_id, client_secret, username, password, scope, auth_style")
		}
		clientCreds := oc.ClientID != "" && oc.ClientSecret != ""
		password := oc.Username != "" && oc.Password != ""
		if !clientCreds && !password {
			return apperr.Invalidf("secrets.oauth_config needs client_id and client_secret (client_credentials) or username and password (oauth2_password)")
		}
		if oc.AuthStyle != "" && oc.AuthStyle != "header" && oc.AuthStyle != "params" {
			return apperr.Invalidf("secrets.oauth_config.auth_style must be header or params")
		}
	}
	return nil
}

// reach sends GET baseURL, without credentials, through the guarded
// client: any HTTP answer means the host is reachable.
func (c Checker) reach(ctx context.Context, baseURL string) (string, error) {
	if baseURL == "" {
		return "", apperr.Invalidf("base_url is required to test the connection")
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL, nil)
	if err != nil {
		return "", apperr.Invalidf("base_url is not a URL the platform can call")
	}
	resp, err := c.HTTP.Do(req)
	switch {
	case err == nil:
		_ = resp.Body.Close()
		return fmt.Sprintf("Reached: GET base_url answered HTTP %d (credentials are sent by the calls that use them).", resp.StatusCode), nil
	case gateway.IsBlocked(err):
		return "", apperr.Wrap(err, apperr.Invalid, "base_url: %s", gateway.BlockedReason)
	case errors.Is(err, context.DeadlineExceeded):
		return "", apperr.Wrap(err, apperr.BadGateway, "base_url did not answer within %s", Timeout)
	}
	return "", apperr.Wrap(err, apperr.BadGateway, "base_url could not be reached (no such host, refused, or a TLS failure)")
}
