package datasource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/models"
)

// ConnectTimeout bounds dialing a data source when its DSN sets none.
const ConnectTimeout = 5 * time.Second

// DefaultMaxConns is a Postgres source's pool size when its DSN sets no
// pool_max_conns.
const DefaultMaxConns = 16

// Options tune the sources a Registry opens. Zero values take the defaults,
// and the zero Allow lets a data source reach public addresses only.
type Options struct {
	MaxConns     int32         // per Postgres source; DefaultMaxConns
	QueryTimeout time.Duration // per statement; QueryTimeout
	// Allow lists networks a data source may reach although they are
	// private, loopback or otherwise special (DATASOURCE_ALLOW_CIDRS).
	Allow []netip.Prefix
	// Platform is the platform's Postgres server, which no data source may
	// be, whatever database it names, even inside Allow (IdentifyPlatform).
	Platform Platform
	// ObserveFunc, when set, is told of every statement a source runs: its
	// driver (the integration kind), its statement (metrics.Statement*),
	// whether it failed and how long it took.
	ObserveFunc func(driver, statement string, failed bool, d time.Duration)
}

// Secrets is the sealed secrets document of a data-source integration.
type Secrets struct {
	DSN string `json:"dsn"`
}

// Registry holds one open source per integration, keyed by the integration's
// id and the hash of its DSN: a rotated secret opens a new pool and closes
// the old one. Sources are opened on first use and closed by Close. It is
// safe for concurrent use; build one per process.
type Registry struct {
	box  *crypt.Box
	opts Options

	mu      sync.RWMutex
	entries map[string]*entry // by integration id
	// sqliteFiles are the absolute paths of the SQLite files the dev seed
	// made, the only ones a sqlite integration may open; none outside dev.
	sqliteFiles []string
	closed      bool
	closing     sync.WaitGroup
}

// entry is the open source of one integration.
type entry struct {
	kind    string
	sealed  []byte // the integration's SecretsEnc when the entry was made
	dsnHash [sha256.Size]byte
	updated time.Time // the integration's UpdatedAt when the entry was made
	src     closableSource
}

type closableSource interface {
	Source
	close()
}

// NewRegistry returns a Registry that opens integration secrets with box
// (nil in a process without SECRETS_KEY: every Source call then fails).
func NewRegistry(box *crypt.Box, o Options) *Registry {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = QueryTimeout
	}
	return &Registry{box: box, opts: o, entries: make(map[string]*entry)}
}

// Guard is what the registry's connections may reach; the SQL tools connect
// through the same (a data-source integration's DSN may serve either).
func (r *Registry) Guard() Guard { return Guard{Allow: r.opts.Allow, Platform: r.opts.Platform} }

// CheckPostgres refuses, as a 400 to show the admin when they save the
// integration, a Postgres DSN every connection of the registry would refuse
// once connected (Guard.CheckPostgres).
func (r *Registry) CheckPostgres(ctx context.Context, dsn string) error {
	return r.Guard().CheckPostgres(ctx, dsn)
}

// EnableSQLite lets the registry serve integrations of kind sqlite whose
// DSN is one of files (paths on this host). Only the dev mode's seed does
// this, for the demo data source it created: any other path (the dev
// platform's own database above all) stays refused, as every SQLite path
// does outside dev, since a tenant's admin could otherwise read any file the
// process can.
func (r *Registry) EnableSQLite(files ...string) error {
	abs := make([]string, 0, len(files))
	for _, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			return fmt.Errorf("datasource: enable sqlite file %s: %w", f, err)
		}
		abs = append(abs, a)
	}
	r.mu.Lock()
	r.sqliteFiles = append(r.sqliteFiles, abs...)
	r.mu.Unlock()
	return nil
}

// CheckSQLite refuses, as a 400 to show the admin when they save the
// integration, a SQLite DSN this registry would not open: every one outside
// appruntime dev, and in it any file but the demo's own.
func (r *Registry) CheckSQLite(dsn string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case len(r.sqliteFiles) == 0:
		return apperr.Invalidf("kind sqlite is for the embedded dev mode only")
	case !r.sqliteAllowed(dsn):
		return apperr.Invalidf("secrets.dsn: a SQLite data source may only be the dev demo's own file (%s)", strings.Join(r.sqliteFiles, ", "))
	}
	return nil
}

// sqliteAllowed reports whether dsn names one of the enabled SQLite files,
// as a plain path (no file: URI, no query). The caller holds r.mu.
func (r *Registry) sqliteAllowed(dsn string) bool {
	if strings.ContainsAny(dsn, "?#") || strings.HasPrefix(dsn, "file:") {
		return false
	}
	abs, err := filepath.Abs(dsn)
	return err == nil && slices.Contains(r.sqliteFiles, abs)
}

// Source returns the data source of integ, opening it on first use. The
// caller must have checked that integ belongs to the workspace in question.
func (r *Registry) Source(ctx context.Context, integ models.Integration) (Source, error) {
	r.mu.RLock()
	e, ok := r.entries[integ.ID]
	closed := r.closed
	// Fast path: the same sealed secrets hold the same DSN.
	current := ok && e.kind == integ.Kind && bytes.Equal(e.sealed, integ.SecretsEnc)
	r.mu.RUnlock()
	if closed {
		return nil, apperr.New(apperr.Unavailable, "data sources are shutting down")
	}
	if current {
		return e.src, nil
	}
	return r.open(integ)
}

// open makes or replaces the entry of integ after its secrets changed.
func (r *Registry) open(integ models.Integration) (Source, error) {
	if integ.Kind != KindPostgres && integ.Kind != KindSQLite {
		return nil, apperr.Invalidf("integration %q (kind %q) is not a data source", integ.Name, integ.Kind)
	}
	if r.box == nil {
		return nil, apperr.New(apperr.Internal, "no SECRETS_KEY to open the secrets of integration %q", integ.Name)
	}
	var secrets Secrets
	if err := r.box.OpenJSON(integ.SecretsEnc, &secrets); err != nil {
		return nil, apperr.Wrap(err, apperr.Internal, "open the secrets of integration %q", integ.Name)
	}
	if secrets.DSN == "" {
		return nil, apperr.New(apperr.BadGateway, "integration %q has no dsn secret", integ.Name)
	}
	hash := sha256.Sum256([]byte(integ.Kind + "\x00" + secrets.DSN))

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, apperr.New(apperr.Unavailable, "data sources are shutting down")
	}
	old, ok := r.entries[integ.ID]
	if ok && old.dsnHash == hash {
		// Re-sealed, same DSN (or another request got here first): keep the pool.
		r.entries[integ.ID] = &entry{kind: old.kind, sealed: bytes.Clone(integ.SecretsEnc), dsnHash: hash, updated: integ.UpdatedAt, src: old.src}
		return old.src, nil
	}
	if ok && integ.UpdatedAt.Before(old.updated) {
		// A caller holding a copy of the integration from before the
		// rotation: the newer DSN is the right one, and flipping back would
		// close the pool the up-to-date callers use.
		return old.src, nil
	}
	var src closableSource
	var err error
	switch integ.Kind {
	case KindPostgres:
		src, err = openPostgres(secrets.DSN, r.opts, r.Guard())
	case KindSQLite:
		switch {
		case len(r.sqliteFiles) == 0:
			return nil, apperr.NotImplementedf("integration %q: SQLite data sources are served only by appruntime dev", integ.Name)
		case !r.sqliteAllowed(secrets.DSN):
			return nil, apperr.Forbiddenf("integration %q: a SQLite data source may only be the dev demo's own file", integ.Name)
		}
		src, err = openSQLite(secrets.DSN, r.opts)
	}
	if err != nil {
		// The integration's settings break a rule (or its file is gone): no
		// request can fix that, the admin must (400 when they save it).
		reason := err.Error()
		var ae *apperr.Error
		if errors.As(err, &ae) {
			reason = ae.Message
		}
		return nil, apperr.Wrap(err, apperr.BadGateway, "integration %q: %s", integ.Name, reason)
	}
	if r.opts.ObserveFunc != nil {
		src = observed{closableSource: src, driver: integ.Kind, observe: r.opts.ObserveFunc}
	}
	r.entries[integ.ID] = &entry{kind: integ.Kind, sealed: bytes.Clone(integ.SecretsEnc), dsnHash: hash, updated: integ.UpdatedAt, src: src}
	if ok {
		// A pool closes once its borrowed connections come back; requests
		// still running on the old DSN finish there.
		r.closing.Add(1)
		go func() {
			defer r.closing.Done()
			old.src.close()
		}()
	}
	return src, nil
}

// Close closes every source and waits for replaced ones to finish closing.
// Source fails afterwards.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	entries := r.entries
	r.entries = map[string]*entry{}
	r.mu.Unlock()
	for _, e := range entries {
		e.src.close()
	}
	r.closing.Wait()
}
