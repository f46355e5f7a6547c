package sqlquery

import (
	"bytes"
	"crypto/sha256"
	"sync"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/models"
)

// Secrets is the sealed secrets document of a SQL integration.
type Secrets struct {
	DSN string `json:"dsn"`
}

// Pools holds one open connection pool per integration, opened on first use
// from the integration's sealed DSN and replaced when the secrets change. P
// is the driver's pool type. It is safe for concurrent use.
type Pools[P any] struct {
	box   *crypt.Box
	kind  string
	open  func(dsn string) (P, error)
	close func(P)

	mu      sync.Mutex
	entries map[string]*poolEntry[P] // by integration id
	closed  bool
}

type poolEntry[P any] struct {
	sealed  []byte
	dsnHash [sha256.Size]byte
	pool    P
}

// NewPools returns a cache of pools for integrations of kind, whose secrets
// box opens; open makes a pool from a DSN (its error is shown, so it must
// not quote the DSN, which holds the password) and close ends one.
func NewPools[P any](box *crypt.Box, kind string, open func(dsn string) (P, error), close func(P)) *Pools[P] {
	return &Pools[P]{box: box, kind: kind, open: open, close: close, entries: map[string]*poolEntry[P]{}}
}

// Get returns the pool of integ, which the caller has checked belongs to the
// run's workspace.
func (p *Pools[P]) Get(integ *models.Integration) (P, error) {
	var zero P
	if integ == nil {
		return zero, apperr.Invalidf("the configured tool has no integration")
	}
	if integ.Kind != p.kind {
		return zero, apperr.Invalidf("integration %q is a %s integration, not %s", integ.Name, integ.Kind, p.kind)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return zero, apperr.New(apperr.Unavailable, "the %s connections are shutting down", p.kind)
	}
	e, ok := p.entries[integ.ID]
	if ok && bytes.Equal(e.sealed, integ.SecretsEnc) {
		return e.pool, nil
	}
	if p.box == nil {
		return zero, apperr.New(apperr.Internal, "no SECRETS_KEY to open the secrets of integration %q", integ.Name)
	}
	var s Secrets
	if err := p.box.OpenJSON(integ.SecretsEnc, &s); err != nil {
		return zero, apperr.Wrap(err, apperr.Internal, "open the secrets of integration %q", integ.Name)
	}
	if s.DSN == "" {
		return zero, apperr.New(apperr.BadGateway, "integration %q has no dsn secret", integ.Name)
	}
	hash := sha256.Sum256([]byte(s.DSN))
	if ok && e.dsnHash == hash {
		e.sealed = integ.SecretsEnc // resealed, same DSN
		return e.pool, nil
	}
	pool, err := p.open(s.DSN)
	if err != nil {
		return zero, apperr.Wrap(err, apperr.BadGateway, "integration %q: %v", integ.Name, err)
	}
	if ok {
		// Runs still holding the old pool finish on it.
		go p.close(e.pool)
	}
	p.entries[integ.ID] = &poolEntry[P]{sealed: integ.SecretsEnc, dsnHash: hash, pool: pool}
	return pool, nil
}

// Close closes every pool; Get fails afterwards.
func (p *Pools[P]) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for id, e := range p.entries {
		p.close(e.pool)
		delete(p.entries, id)
	}
}
