package gateway

import (
	"context"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// tokenKey names a cached OAuth2 token (seed 000: cached per integration,
// token URL, scope and credential). credential is a hash of the
// integration's oauth_config, so a rotated secret gets a token of its own.
type tokenKey struct {
	integration, tokenURL, scope, credential string
}

func (k tokenKey) flight() string {
	return k.integration + "\x00" + k.tokenURL + "\x00" + k.scope + "\x00" + k.credential
}

// tokenCache holds one token per key. Concurrent misses of one key make one
// grant request (singleflight), and a token an upstream refused is evicted
// only if it is still the cached one (compare and delete), so fifty calls
// that all saw the same token refused cause one new grant, not fifty.
type tokenCache struct {
	mu      sync.Mutex
	tokens  map[tokenKey]*oauth2.Token
	flights singleflight.Group
}

func newTokenCache() *tokenCache { return &tokenCache{tokens: map[tokenKey]*oauth2.Token{}} }

// valid returns the cached token of key when it has not expired (oauth2's
// Valid keeps a margin before the expiry).
func (c *tokenCache) valid(key tokenKey) *oauth2.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.tokens[key]; t.Valid() {
		return t
	}
	return nil
}

// get returns a valid token of key, running grant when there is none. The
// grant runs on a context that no one caller's cancellation ends (every
// caller waiting on the flight shares its result), so grant must bound
// itself; a caller whose context ends stops waiting.
func (c *tokenCache) get(ctx context.Context, key tokenKey, grant func(context.Context) (*oauth2.Token, error)) (*oauth2.Token, error) {
	if t := c.valid(key); t != nil {
		return t, nil
	}
	flight := c.flights.DoChan(key.flight(), func() (any, error) {
		// A flight that ended between our miss and DoChan has stored its token.
		if t := c.valid(key); t != nil {
			return t, nil
		}
		t, err := grant(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		c.put(key, t)
		return t, nil
	})
	select {
	case r := <-flight:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*oauth2.Token), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put caches t under key and forgets the tokens of the key's earlier
// credentials: after a rotation they are never asked for again.
func (c *tokenCache) put(key tokenKey, t *oauth2.Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.tokens {
		if k.integration == key.integration && k.tokenURL == key.tokenURL && k.scope == key.scope && k.credential != key.credential {
			delete(c.tokens, k)
		}
	}
	c.tokens[key] = t
}

// evict forgets t if it is still the token cached under key.
func (c *tokenCache) evict(key tokenKey, t *oauth2.Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens[key] == t {
		delete(c.tokens, key)
	}
}
