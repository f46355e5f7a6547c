package limit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/jobs"
)

// ExtractionSlotsPerSurface is how many structured_data_extraction runs one
// surface may have at once (docs/architecture.md#queues); a third is refused.
const ExtractionSlotsPerSurface = 2

// ExtractionHold is how long an extraction slot is kept when its holder
// never releases it: the job's deadline plus a margin.
const ExtractionHold = jobs.ExtractDeadline + time.Minute

// SemaphoreRetryAfter is the longest wait a refused caller is told: holders
// usually release long before their entries would expire.
const SemaphoreRetryAfter = 5 * time.Second

// releaseTimeout bounds a release, which runs on cleanup paths whose
// context may be done.
const releaseTimeout = 2 * time.Second

// acquireScript admits a holder when fewer than ARGV[1] unexpired entries
// remain. An entry is a member of a sorted set scored by its deadline (ms,
// Redis's clock, so replicas' clocks do not matter); expired entries are
// dropped first, which is what frees the slot of a holder that died.
// It returns -1 when admitted, else the ms until the earliest entry expires.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local hold = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + hold, ARGV[3])
  if redis.call('PTTL', KEYS[1]) < hold then
    redis.call('PEXPIRE', KEYS[1], hold)
  end
  return -1
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(tonumber(first[2]) - now, 0)
`)

// Semaphore admits at most a fixed number of concurrent holders per
// surface, across every replica. It is safe for concurrent use.
type Semaphore struct {
	rc     redis.UniversalClient
	prefix string
	slots  int
	hold   time.Duration
}

// NewSemaphore returns a semaphore named name (one per kind of work) with
// slots per surface. hold is how long a slot stays taken when its holder
// never releases it; make it at least the work's deadline.
func NewSemaphore(rc redis.UniversalClient, keyPrefix, name string, slots int, hold time.Duration) *Semaphore {
	return &Semaphore{rc: rc, prefix: keyPrefix + "sem:" + name + ":", slots: slots, hold: hold}
}

// Acquire takes one of surface's slots without waiting. It returns a
// release func, which the caller must call when the work ends (calling it
// again does nothing), or a 429 (apperr.RateLimited) with a RetryAfter when
// every slot is taken.
func (s *Semaphore) Acquire(ctx context.Context, surface string) (release func(), err error) {
	return s.acquire(ctx, surface, s.hold)
}

// AcquireUntil is Acquire for work that ends by deadline: the slot of a
// holder that never releases it frees itself then (at most the
// semaphore's hold from now).
func (s *Semaphore) AcquireUntil(ctx context.Context, surface string, deadline time.Time) (release func(), err error) {
	hold := min(time.Until(deadline), s.hold)
	if hold < time.Millisecond {
		hold = time.Millisecond
	}
	return s.acquire(ctx, surface, hold)
}

func (s *Semaphore) acquire(ctx context.Context, surface string, hold time.Duration) (release func(), err error) {
	token := newToken()
	key := s.prefix + surface
	if err := s.take(ctx, key, token, hold); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() { s.drop(ctx, key, token) })
	}, nil
}

// take admits token as a holder of key's slots for hold, or answers a 429
// whose Err is ErrSlotsTaken (with the wait until the earliest entry
// expires, at most SemaphoreRetryAfter), or a 503 when Redis fails.
func (s *Semaphore) take(ctx context.Context, key, token string, hold time.Duration) error {
	wait, err := acquireScript.Run(ctx, s.rc, []string{key}, s.slots, hold.Milliseconds(), token).Int64()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("limit: semaphore: %w", ctx.Err())
		}
		return apperr.Wrap(err, apperr.Unavailable, "concurrency limiter is unavailable; retry")
	}
	if wait >= 0 {
		retry := min(time.Duration(wait)*time.Millisecond, SemaphoreRetryAfter)
		e := apperr.RateLimitedAfter(retry, "this surface already runs %d of these at once", s.slots)
		e.Err = ErrSlotsTaken
		return e
	}
	return nil
}

// drop frees token's slot of key. It runs on cleanup paths whose context
// may be done; on failure the entry still expires at its deadline.
func (s *Semaphore) drop(ctx context.Context, key, token string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	s.rc.ZRem(rctx, key, token)
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
