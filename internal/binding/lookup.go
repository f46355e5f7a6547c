package binding

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// Freshness of the runtime's cached bindings (seed 000: "re-read at most
// every 5 seconds per surface, and immediately after it is saved").
const (
	// MaxStaleness is how long a cached binding is served when its version
	// cannot be checked against the stamp (no stamp, or Redis failing).
	MaxStaleness = 5 * time.Second
	// maxTrustedAge bounds how long a stamp match alone keeps an entry, so a
	// stamp that a failed save never advanced cannot pin a stale binding.
	maxTrustedAge = 5 * time.Minute
	// loadTimeout bounds a reload shared by concurrent callers, so one
	// caller's cancellation does not fail the others.
	loadTimeout = 5 * time.Second
	// stampTimeout bounds the stamp and the announcement after a save.
	stampTimeout = 2 * time.Second
	// deletedStamp marks a deleted binding; no version ever equals it.
	deletedStamp    = -1
	deletedStampTTL = 24 * time.Hour
	// redisWarnEvery limits the warning logged while Redis fails.
	redisWarnEvery = 10 * time.Second
)

// entry is one cached binding. It never changes once stored.
type entry struct {
	loaded   *Loaded
	loadedAt time.Time
	stampKey string
}

// setStampIfNewer moves a stamp forward only, so that two saves whose
// announcements cross never leave the older version stamped.
var setStampIfNewer = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]))
local new = tonumber(ARGV[1])
if cur == nil or cur < new then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0`)

func (s *Service) stampKey(id string) string { return s.prefix + "binding:ver:" + id }
func (s *Service) savedChannel() string      { return s.prefix + "binding:saved" }

// Lookup returns the binding for the runtime's hot path, parsed and indexed.
// It serves the cached entry while its version equals the binding's Redis
// stamp (one GET), so a save on any replica applies on the very next call;
// when the stamp is missing or Redis fails, an entry is served until it is
// MaxStaleness old. Lookup is not scoped to a workspace: callers compare
// Loaded.WorkspaceID with the session's. An unknown binding is a 404.
func (s *Service) Lookup(ctx context.Context, id string) (*Loaded, error) {
	s.mu.RLock()
	e := s.entries[id]
	s.mu.RUnlock()
	stamp, stamped := 0, false
	if e != nil {
		var fresh bool
		fresh, stamp, stamped = s.fresh(ctx, e)
		if fresh {
			return e.loaded, nil
		}
	}
	v, err, _ := s.loads.Do(id, func() (any, error) { return s.load(ctx, id) })
	if err != nil {
		return nil, err
	}
	l := v.(*Loaded)
	if !stamped && s.redis != nil {
		// A cold load (or an entry evicted meanwhile) has not seen the stamp yet.
		n, err := s.redis.Get(ctx, s.stampKey(id)).Int()
		if err == nil {
			stamp, stamped = n, true
		}
	}
	if stamped && stamp >= 0 && stamp < l.Version {
		// A save whose stamp never landed (Redis failed after the commit):
		// repair it, or every replica would reload on every call.
		s.stamp(ctx, id, l.Version)
	}
	return l, nil
}

// fresh reports whether e may be served, and the stamp it saw, if any.
func (s *Service) fresh(ctx context.Context, e *entry) (ok bool, stamp int, stamped bool) {
	age := s.now().Sub(e.loadedAt)
	if s.redis == nil {
		return age < MaxStaleness, 0, false
	}
	val, err := s.redis.Get(ctx, e.stampKey).Result()
	switch {
	case err == nil:
		n, perr := strconv.Atoi(val)
		if perr != nil {
			return false, 0, false
		}
		return n == e.loaded.Version && age < maxTrustedAge, n, true
	case errors.Is(err, redis.Nil):
		return age < MaxStaleness, 0, false
	default:
		s.warnRedis(ctx, err)
		return age < MaxStaleness, 0, false
	}
}

// load reads the binding from the database and caches it.
func (s *Service) load(ctx context.Context, id string) (*Loaded, error) {
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
	e := &entry{loaded: NewLoaded(b), loadedAt: s.now(), stampKey: s.stampKey(id)}
	s.mu.Lock()
	s.entries[id] = e
	s.mu.Unlock()
	return e.loaded, nil
}

func (s *Service) evict(id string) {
	s.mu.Lock()
	delete(s.entries, id)
	s.mu.Unlock()
}

// announce tells every replica, this one included, that id was saved as
// version: the stamp first (so the next Lookup anywhere sees it), then the
// message that evicts cached entries. A Redis failure here is logged, not
// returned: the save has committed, and entries age out on their own.
func (s *Service) announce(ctx context.Context, id string, version int) {
	s.evict(id)
	if s.redis == nil {
		return
	}
	s.stamp(ctx, id, version)
	s.publish(ctx, id)
}

// announceDeleted is announce for a deleted binding.
func (s *Service) announceDeleted(ctx context.Context, id string) {
	s.evict(id)
	if s.redis == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stampTimeout)
	defer cancel()
	if err := s.redis.Set(ctx, s.stampKey(id), deletedStamp, deletedStampTTL).Err(); err != nil {
		s.log.ErrorContext(ctx, "binding: stamp deletion", "binding_id", id, "error", err.Error())
	}
	s.publish(ctx, id)
}

func (s *Service) stamp(ctx context.Context, id string, version int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stampTimeout)
	defer cancel()
	if err := setStampIfNewer.Run(ctx, s.redis, []string{s.stampKey(id)}, version).Err(); err != nil {
		s.log.ErrorContext(ctx, "binding: set version stamp", "binding_id", id, "version", version, "error", err.Error())
	}
}

func (s *Service) publish(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stampTimeout)
	defer cancel()
	if err := s.redis.Publish(ctx, s.savedChannel(), id).Err(); err != nil {
		s.log.ErrorContext(ctx, "binding: announce save", "binding_id", id, "error", err.Error())
	}
}

func (s *Service) warnRedis(ctx context.Context, err error) {
	now := time.Now()
	s.mu.Lock()
	if now.Sub(s.lastRedisWarn) < redisWarnEvery {
		s.mu.Unlock()
		return
	}
	s.lastRedisWarn = now
	s.mu.Unlock()
	s.log.WarnContext(ctx, "binding: version stamp unavailable; serving cached bindings up to 5s old", "error", err.Error())
}
