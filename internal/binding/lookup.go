package binding

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// Freshness of the runtime's cached bindings (seed 000: "re-read at most
// every 5 seconds per surface, and immediately after it is saved").
const (
	// MaxStaleness is how long a cached binding is served before it is
	// re-read. A save anywhere evicts it at once on every replica.
	MaxStaleness = 5 * time.Second
	// loadTimeout bounds a reload shared by concurrent callers, so one
	// caller's cancellation does not fail the others.
	loadTimeout = 5 * time.Second
	// announceWait bounds how long a save waits for every replica to
	// acknowledge the eviction before it answers.
	announceWait = 2 * time.Second
	// subscribeTimeout bounds NewService's wait for its subscription.
	subscribeTimeout = 10 * time.Second
)

// entry is one cached binding. It never changes once stored.
type entry struct {
	loaded   *Loaded
	loadedAt time.Time
}

// Lookup returns the binding for the runtime's hot path, parsed and indexed,
// with no Redis or database round trip while the cached entry is younger than
// MaxStaleness. Every save, on any replica, evicts the entry on every replica
// before the save is answered (an acknowledged broadcast), so a saved change
// applies on the very next call anywhere. Lookup is not scoped to a
// workspace: callers compare Loaded.WorkspaceID with the session's. An
// unknown binding is a 404.
func (s *Service) Lookup(ctx context.Context, id string) (*Loaded, error) {
	s.mu.RLock()
	e := s.entries[id]
	generation := s.evictions
	s.mu.RUnlock()
	if e != nil && s.now().Sub(e.loadedAt) < MaxStaleness {
		return e.loaded, nil
	}
	key := id + "@" + strconv.FormatUint(generation, 10)
	v, err, _ := s.loads.Do(key, func() (any, error) { return s.load(ctx, id, generation) })
	if err != nil {
		return nil, err
	}
	return v.(*Loaded), nil
}

// load reads the binding from the database and caches it, unless an
// eviction happened since generation was read: the row it read may then
// predate a save whose announcement this replica has already applied.
func (s *Service) load(ctx context.Context, id string, generation uint64) (*Loaded, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	defer cancel()
	if !models.IsID(id) {
		return nil, apperr.NotFoundf("binding %s not found", id)
	}
	var rows []models.Binding
	if err := s.store.DB.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("binding: load %s: %w", id, err)
	}
	if len(rows) == 0 {
		s.evict(id)
		return nil, apperr.NotFoundf("binding %s not found", id)
	}
	b, err := fromRow(rows[0])
	if err != nil {
		return nil, err
	}
	e := &entry{loaded: NewLoaded(b), loadedAt: s.now()}
	s.mu.Lock()
	if s.evictions == generation {
		s.entries[id] = e
	}
	s.mu.Unlock()
	return e.loaded, nil
}

func (s *Service) evict(id string) {
	s.mu.Lock()
	delete(s.entries, id)
	s.evictions++
	s.mu.Unlock()
}

// evictAll empties the cache: after a reconnection of the broadcast, saves
// announced while it was down were missed.
func (s *Service) evictAll(context.Context) error {
	s.mu.Lock()
	s.entries = map[string]*entry{}
	s.evictions++
	s.mu.Unlock()
	return nil
}

// announceBeforeCommit tells every replica, this one included, that id is
// being saved or deleted, inside the save's transaction and before it
// commits, and waits (bounded) until each has evicted its entry. A Redis
// that cannot carry it is the save's error (503, apperr.Unavailable): the
// transaction rolls back, so no replica serves for up to MaxStaleness a
// binding saved without it, as token revocation does (auth.TokenCache.Revoke).
// A replica may read the row again before the commit, so announce follows
// the commit.
func (s *Service) announceBeforeCommit(ctx context.Context, id string) error {
	if s.broadcast == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, announceWait+time.Second)
	defer cancel()
	if err := s.broadcast.Publish(ctx, id, announceWait); err != nil {
		return apperr.Wrap(err, apperr.Unavailable, "binding %s was not saved: its change cannot reach every replica while Redis is unavailable; retry shortly", id)
	}
	return nil
}

// announce tells every replica, this one included, that id was saved or
// deleted, and waits (bounded) until each has evicted its entry: once the
// save has committed, it evicts what a replica read between
// announceBeforeCommit and the commit. A Redis failure here is logged, not
// returned: the save has committed and its announcement before the commit
// reached every replica; an entry read in between ages out within
// MaxStaleness.
func (s *Service) announce(ctx context.Context, id string) {
	s.evict(id)
	if s.broadcast == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceWait+time.Second)
	defer cancel()
	if err := s.broadcast.Publish(ctx, id, announceWait); err != nil {
		s.log.ErrorContext(ctx, "binding: announce save", "binding_id", id, "error", err.Error())
	}
}
