package auth

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/models"
)

// Freshness of the tokens a TokenCache keeps.
const (
	// TokenMaxStaleness is how long a verified token is trusted without
	// reading its row again. A revocation through TokenCache.Revoke, on
	// any replica, applies everywhere before it is answered; a row removed
	// any other way (its agent or workspace deleted) stops working within
	// this time.
	TokenMaxStaleness = 5 * time.Second
	// revokedHold is how long a revoked token is refused whatever a read
	// returns: longer than any load begun before the revocation committed
	// may keep it cached.
	revokedHold = time.Minute
	// revokeWait bounds how long a revocation waits for every replica to
	// acknowledge it.
	revokeWait = 2 * time.Second
	// tokenSubscribeTimeout bounds NewTokenCache's wait for its subscription.
	tokenSubscribeTimeout = 10 * time.Second
)

// TokenCache verifies API tokens (Verify's rules) from a process-local
// cache, so a request with a token verified in the last TokenMaxStaleness
// costs no database round trip. Revocations reach every replica through an
// acknowledged broadcast before Revoke returns, and a revoked token is
// refused even by a load that read its row before the revocation committed.
// It is safe for concurrent use; Close stops its listener.
type TokenCache struct {
	db        *gorm.DB
	broadcast *rdb.Broadcast // nil without Redis: only this process is told
	log       *slog.Logger
	now       func() time.Time

	mu      sync.Mutex
	entries map[string]tokenEntry // by token hash
	revoked map[string]time.Time  // token id → refused until
}

// tokenEntry is one verified token and when it was read.
type tokenEntry struct {
	tok      models.APIToken
	loadedAt time.Time
}

// TokenCacheOptions configure a TokenCache.
type TokenCacheOptions struct {
	DB *gorm.DB
	// Redis carries the revocation broadcast; nil leaves the process on its
	// own (tests, a single process).
	Redis redis.UniversalClient
	// KeyPrefix starts the broadcast's channel and keys.
	KeyPrefix string
	Log       *slog.Logger
	// NowFunc is the clock; nil is time.Now.
	NowFunc func() time.Time
}

// NewTokenCache returns a TokenCache and, with Redis, returns once its
// revocation broadcast is subscribed.
func NewTokenCache(o TokenCacheOptions) (*TokenCache, error) {
	c := &TokenCache{db: o.DB, log: o.Log, now: o.NowFunc, entries: map[string]tokenEntry{}, revoked: map[string]time.Time{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if o.Redis == nil {
		return c, nil
	}
	c.broadcast = rdb.NewBroadcast(o.Redis, o.KeyPrefix, "token:revoked", c.log)
	if err := c.broadcast.Listen(c.applyAnnouncement, c.evictAll, tokenSubscribeTimeout); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return c, nil
}

// Close stops listening for revocations.
func (c *TokenCache) Close() {
	c.broadcast.Close()
}

// Verify returns the principal of a bearer token of scope, as auth.Verify
// does, from the cache while its entry is fresh.
func (c *TokenCache) Verify(ctx context.Context, token, scope string) (Principal, error) {
	if !strings.HasPrefix(token, tokenPrefix[scope]) {
		return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
	}
	hash := HashToken(token)
	now := c.now()
	c.mu.Lock()
	e, cached := c.entries[hash]
	c.mu.Unlock()
	if !cached || now.Sub(e.loadedAt) >= TokenMaxStaleness {
		tok, found, err := loadToken(ctx, c.db, hash)
		if err != nil {
			return Principal{}, err
		}
		if !found {
			c.mu.Lock()
			delete(c.entries, hash)
			c.mu.Unlock()
			return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
		}
		e = tokenEntry{tok: tok, loadedAt: now}
	}
	c.mu.Lock()
	until, isRevoked := c.revoked[e.tok.ID]
	if isRevoked && now.Before(until) {
		delete(c.entries, hash)
		c.mu.Unlock()
		return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
	}
	if isRevoked {
		delete(c.revoked, e.tok.ID)
	}
	stamp := e.tok.LastUsedAt == nil || now.Sub(*e.tok.LastUsedAt) >= LastUsedResolution
	if stamp {
		// This request stamps it; concurrent ones see the new stamp.
		used := now.UTC()
		e.tok.LastUsedAt = &used
	}
	c.entries[hash] = e
	c.mu.Unlock()
	if e.tok.Scope != scope {
		return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
	}
	if stamp {
		if err := stampLastUsed(ctx, c.db, e.tok.ID, now.UTC()); err != nil {
			return Principal{}, err
		}
	}
	return principalOf(e.tok), nil
}

// Revoke makes the tokens ids refused by every replica, this one first,
// and waits (bounded) for each replica to acknowledge. Call it inside the
// transaction that revokes or deletes their rows, before it commits: a
// replica that reads a row before the commit refuses the token all the
// same, and should the commit fail the token is refused for a while, which
// is safe. A Redis failure is an error, so the transaction rolls back.
// Many ids (a deleted workspace's tokens) go in announcements of up to
// revokeBatch ids each, so the transaction waits once per batch, not once
// per token.
func (c *TokenCache) Revoke(ctx context.Context, ids ...string) error {
	c.applyRevocation(ids...)
	if c.broadcast == nil {
		return nil
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), revokeBatch)]
		ids = ids[len(batch):]
		if err := c.broadcast.Publish(ctx, strings.Join(batch, revokeSeparator), revokeWait); err != nil {
			return fmt.Errorf("auth: announce token revocation: %w", err)
		}
	}
	return nil
}

// An announcement carries token ids (UUIDs) joined by revokeSeparator.
const (
	revokeSeparator = ","
	revokeBatch     = 256
)

// applyAnnouncement applies a revocation announced by a replica.
func (c *TokenCache) applyAnnouncement(payload string) {
	c.applyRevocation(strings.Split(payload, revokeSeparator)...)
}

// applyRevocation refuses tokens ids for revokedHold and drops their
// entries.
func (c *TokenCache) applyRevocation(ids ...string) {
	if len(ids) == 0 {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.revoked[id] = now.Add(revokedHold)
	}
	for hash, e := range c.entries {
		if _, ok := c.revoked[e.tok.ID]; ok {
			delete(c.entries, hash)
		}
	}
	for rid, until := range c.revoked {
		if !now.Before(until) {
			delete(c.revoked, rid)
		}
	}
}

// evictAll empties the cache: after a reconnection of the broadcast,
// revocations announced meanwhile were missed.
func (c *TokenCache) evictAll(context.Context) error {
	c.mu.Lock()
	c.entries = map[string]tokenEntry{}
	c.mu.Unlock()
	return nil
}

// principalOf is who tok speaks for.
func principalOf(tok models.APIToken) Principal {
	p := Principal{TokenID: tok.ID, WorkspaceID: tok.WorkspaceID, Scope: tok.Scope}
	if tok.UserID != nil {
		p.UserID = *tok.UserID
	}
	if tok.AgentID != nil {
		p.AgentID = *tok.AgentID
	}
	return p
}
