// Package admin is the workspace administration behind the admin API and
// the console: workspaces, agents, integrations, users and API tokens. Every
// change is validated here, scoped to the caller's workspace (another
// workspace's ids are not found), and audited in its own transaction.
// Secrets (integration credentials, webhook secrets) are sealed at rest and
// never returned after the reply that created them.
package admin

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxNameLength bounds the names admins give things.
const MaxNameLength = 200

// MaxURLLength bounds URLs admins configure.
const MaxURLLength = 2048

// Service administers workspaces and what they hold.
type Service struct {
	st           *store.Store
	box          *crypt.Box
	checkSQLite  func(dsn string) error
	checkServer  func(ctx context.Context, dsn string) error
	testConn     TestConnectionFunc
	sessions     Sessions
	tokens       *auth.TokenCache // nil: every token's row is read
	reprioritise func(ctx context.Context, tx *gorm.DB, agentID, field string) error
	integrations IntegrationChanges // nil: no process caches integrations
}

// IntegrationChanges evicts a changed integration from every replica's
// cache (integration.Lookup): AnnounceBeforeCommit from inside the change's
// transaction (its error fails the change), Announce once it has committed.
type IntegrationChanges interface {
	AnnounceBeforeCommit(ctx context.Context, id string) error
	Announce(ctx context.Context, id string)
}

// Sessions ends the app sessions a user or a host token opened, inside the
// caller's transaction and on every replica before it commits
// (session.Issuer).
type Sessions interface {
	RevokeUserSessions(ctx context.Context, tx *gorm.DB, userID string) error
	RevokeTokenSessions(ctx context.Context, tx *gorm.DB, tokenID string) error
}

// Options are what a Service is built from.
type Options struct {
	Store *store.Store
	// Secrets seals integration secrets and webhook secrets (Config.SecretsKey).
	// Without it, changes that store a secret fail.
	Secrets *crypt.Box
	// CheckSQLiteFunc refuses the DSN (a file path on the server) of a
	// sqlite integration that the data sources would not open: all of them
	// but the dev demo's own file (datasource.Registry.CheckSQLite), since
	// an admin could otherwise point one at any file the server can read.
	// nil refuses the kind.
	CheckSQLiteFunc func(dsn string) error
	// CheckPostgresFunc connects once to a postgres integration's DSN as
	// the data sources and the SQL tools would, and refuses (400) what they
	// would refuse once connected: the platform's own server, whatever
	// database the DSN names (datasource.Registry.CheckPostgres). A server
	// it cannot reach is no refusal. nil checks the DSN's form only.
	CheckPostgresFunc func(ctx context.Context, dsn string) error
	// TestConnectionFunc tests an integration's connection as its real
	// calls make it (conncheck.Checker.Check); nil answers every test as
	// unavailable.
	TestConnectionFunc TestConnectionFunc
	// Sessions ends the app sessions of a deleted user or a revoked host
	// token. Required: without it those would live on until they expire.
	Sessions Sessions
	// Tokens verifies API tokens from a cache that revoking or deleting a
	// token invalidates on every replica; nil reads every token's row.
	Tokens *auth.TokenCache
	// ReprioritiseFunc recomputes, inside the agent's update, the priority
	// of its unfinished tasks when its priority_field changes
	// (task.Reprioritise); nil leaves them as they are.
	ReprioritiseFunc func(ctx context.Context, tx *gorm.DB, agentID, field string) error
	// Integrations is told of every integration update and delete, so a
	// rotated secret or DSN applies on the next call on every replica and
	// worker; nil is for a process that caches no integration.
	Integrations IntegrationChanges
}

// NewService returns an admin service.
func NewService(o Options) *Service {
	return &Service{st: o.Store, box: o.Secrets, checkSQLite: o.CheckSQLiteFunc, checkServer: o.CheckPostgresFunc, testConn: o.TestConnectionFunc, sessions: o.Sessions, tokens: o.Tokens,
		reprioritise: o.ReprioritiseFunc, integrations: o.Integrations}
}

// errNoSecretsKey explains why a secret cannot be stored or read.
var errNoSecretsKey = errors.New("admin: SECRETS_KEY is not configured")

// sealJSON encrypts a JSON secret document (integration secrets).
func (s *Service) sealJSON(v any) ([]byte, error) {
	if s.box == nil {
		return nil, errNoSecretsKey
	}
	return s.box.SealJSON(v)
}

// sealBytes encrypts a raw secret (a webhook signing secret is sealed as its
// bytes, which is how the webhook deliverer opens it).
func (s *Service) sealBytes(secret []byte) ([]byte, error) {
	if s.box == nil {
		return nil, errNoSecretsKey
	}
	return s.box.Seal(secret)
}

// open decrypts what seal produced into v.
func (s *Service) open(sealed []byte, v any) error {
	if len(sealed) == 0 {
		return nil
	}
	if s.box == nil {
		return errNoSecretsKey
	}
	return s.box.OpenJSON(sealed, v)
}

// change runs fn in a transaction and records e in it when fn succeeds;
// fn may fill e's target id and detail.
func (s *Service) change(ctx context.Context, e *audit.Entry, fn func(tx *gorm.DB) error) error {
	return s.st.Tx(ctx, func(tx *gorm.DB) error {
		if err := fn(tx); err != nil {
			return err
		}
		return audit.Record(ctx, tx, *e)
	})
}

// take loads the row of dst's table with id in the workspace; what names it
// in the not-found error. A malformed id is not found either.
func take(ctx context.Context, db *gorm.DB, dst any, workspaceID, id, what string) error {
	if !models.IsID(id) {
		return apperr.NotFoundf("%s not found", what)
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ?", id, workspaceID).Take(dst).Error
	return store.NotFound(err, "admin: find "+what, what)
}

// checkHTTPURL checks an absolute http or https URL with a host and no
// credentials in it; "" is allowed when optional.
func checkHTTPURL(raw, field string, optional bool) (string, error) {
	v := strings.TrimSpace(raw)
	if v == "" {
		if optional {
			return "", nil
		}
		return "", apperr.Invalidf("%s is required", field)
	}
	if len(v) > MaxURLLength {
		return "", apperr.Invalidf("%s is longer than %d characters", field, MaxURLLength)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Hostname() == "" {
		return "", apperr.Invalidf("%s must be an absolute http or https URL", field)
	}
	if u.User != nil {
		return "", apperr.Invalidf("%s may not carry credentials; put them in the secrets", field)
	}
	if u.Fragment != "" {
		return "", apperr.Invalidf("%s may not have a #fragment", field)
	}
	return v, nil
}

// inUse turns a foreign-key refusal into a 409 saying what still uses the row.
func inUse(err error, what, users string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrForeignKeyViolated) || strings.Contains(err.Error(), "SQLSTATE 23503") ||
		strings.Contains(err.Error(), "FOREIGN KEY constraint failed") {
		return apperr.Conflictf("%s is still used by %s; remove them first", what, users)
	}
	return fmt.Errorf("admin: delete %s: %w", what, err)
}
