package limit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
)

// The per-surface rate of seed 000 ("Limits and side effects"): a surface
// may call 5 times a second sustained, in bursts of up to 20.
const (
	SurfaceRatePerSecond = 5
	SurfaceBurst         = 20
)

// Rate is a sustained rate with a burst allowance.
type Rate struct {
	PerSecond int
	Burst     int
}

// SurfaceRate is the rate every surface gets unless SetRate changes it.
var SurfaceRate = Rate{PerSecond: SurfaceRatePerSecond, Burst: SurfaceBurst}

// Limiter is the per-surface rate limit. Its state is a GCRA cell per
// surface in Redis, so all replicas share one budget per surface; it is safe
// for concurrent use.
//
// A replica spends its share of a surface's budget from a lease: when it
// must ask Redis, it reserves the calls waiting plus a few more (AllowAtMost),
// and the calls that follow spend the reserved ones locally, with no round
// trip, until the lease runs out or expires (LeaseTTL); unspent tokens of an
// expired lease are forfeited, never handed out late. A lease grows (doubles)
// while it is used up within its TTL and shrinks to the calls it served when it
// expires unspent, up to a quarter of the burst (leaseShare), so a busy
// replica asks Redis about once per lease while an occasional caller asks
// for no more than its own call. Every admitted call was reserved in the
// shared cell first, so the replicas together never admit more than the
// budget; the tolerance this costs is in
// docs/performance.md#the-limiters-lease.
//
// Concurrent calls of one surface on one replica share a round trip: while
// a surface's reservation is in flight, the calls that arrive queue, and the
// next reservation asks for all of them at once. The queued calls pass in
// arrival order as far as the budget goes and the rest are refused, as if
// they had been made one after the other at that instant (a reservation that
// ends on a fraction of a call forfeits that fraction: never looser than one
// call at a time).
type Limiter struct {
	rl     *redis_rate.Limiter
	prefix string
	limit  atomic.Pointer[redis_rate.Limit]
	ttl    atomic.Int64 // a lease's TTL, LeaseTTL unless SetLeaseTTL changed it

	mu       sync.Mutex
	surfaces map[string]*lease // by surface: leases held and reservations in flight
	swept    time.Time         // when surfaces was last swept of expired leases
}

// LeaseTTL is how long a replica may hold the tokens it reserved for a
// surface before spending them: past it they are forfeited, so an idle
// replica's unspent tokens are out of the other replicas' reach for no
// longer than this, and a call is admitted at most LeaseTTL after its token
// was reserved (docs/performance.md#the-limiters-lease).
const LeaseTTL = 500 * time.Millisecond

// leaseShare bounds a lease to 1/leaseShare of the burst (at least one call).
const leaseShare = 4

// lease is one replica's share of a surface's budget and the calls waiting
// for the next reservation; its fields are guarded by Limiter.mu.
type lease struct {
	key      string    // the surface's cell in Redis
	tokens   int       // reserved in Redis, not yet spent
	reserved int       // tokens the current lease started with
	expires  time.Time // when the unspent tokens are forfeited
	size     int       // calls the next reservation asks for, at least 1
	busy     bool      // a reservation is in flight
	calls    []chan verdict
}

// take spends one token of the lease if it holds one that has not expired.
func (s *lease) take(now time.Time) bool {
	if s.tokens == 0 || !now.Before(s.expires) {
		return false
	}
	s.tokens--
	return true
}

// plan sizes the next reservation from how the last lease went, before a
// reservation of calls calls: a lease used up within its TTL doubles, one
// that expired unspent shrinks to the calls it served (its remainder is
// forfeited). It returns how many tokens to reserve beyond the calls.
func (s *lease) plan(now time.Time, most int) int {
	switch {
	case s.tokens > 0: // expired unspent: the call that reserved it and the spent ones
		s.size = 1 + s.reserved - s.tokens
		s.tokens = 0
	case now.Before(s.expires): // used up in time
		s.size *= 2
	}
	s.size = max(1, min(s.size, most))
	return s.size - 1
}

// fill stores what a reservation of calls calls plus extra got beyond the
// calls as the new lease.
func (s *lease) fill(now time.Time, allowed, calls int, ttl time.Duration) {
	s.tokens = max(0, allowed-calls)
	s.reserved = s.tokens
	s.expires = now.Add(ttl)
}

// verdict is one call's share of a reservation: wait 0 passes.
type verdict struct {
	wait time.Duration
	err  error
}

// NewLimiter returns a Limiter at SurfaceRate whose keys start with keyPrefix.
func NewLimiter(rc redis.UniversalClient, keyPrefix string) *Limiter {
	l := &Limiter{rl: redis_rate.NewLimiter(keyspace{rc}), prefix: keyPrefix + "rate:surface:", surfaces: map[string]*lease{}}
	l.SetRate(SurfaceRate)
	l.SetLeaseTTL(LeaseTTL)
	return l
}

// SetLeaseTTL changes the TTL of the leases reserved from the next call on
// (the test that counts round trips holds its leases longer than its
// slowest requests take, so that its count does not depend on the
// machine's speed).
func (l *Limiter) SetLeaseTTL(d time.Duration) { l.ttl.Store(int64(max(d, time.Millisecond))) }

// SetRate changes the rate of every surface from the next call on (tests
// of other packages raise it so that their calls are not refused). Tokens
// already leased are spent at the rate they were reserved at.
func (l *Limiter) SetRate(r Rate) {
	lim := redis_rate.Limit{Rate: max(r.PerSecond, 1), Burst: max(r.Burst, 1), Period: time.Second}
	l.limit.Store(&lim)
}

// Rate returns the current rate.
func (l *Limiter) Rate() Rate {
	lim := l.limit.Load()
	return Rate{PerSecond: lim.Rate, Burst: lim.Burst}
}

// Allow spends one call of surface's budget: from this replica's lease
// when it holds a token, else from Redis. It returns nil, or a 429
// (apperr.RateLimited) whose RetryAfter is when the next call will pass.
// When Redis cannot be asked it refuses with a retryable 503 rather than
// letting calls through unmetered.
func (l *Limiter) Allow(ctx context.Context, surface string) error {
	now := time.Now()
	l.mu.Lock()
	s := l.leaseOf(surface, now)
	if s.take(now) {
		l.mu.Unlock()
		return nil
	}
	if s.busy {
		ch := make(chan verdict, 1)
		s.calls = append(s.calls, ch)
		l.mu.Unlock()
		select {
		case v := <-ch:
			return l.refusal(v)
		case <-ctx.Done():
			// The queued call may still be spent: that only ever errs on
			// the strict side.
			return fmt.Errorf("limit: rate limiter: %w", ctx.Err())
		}
	}
	s.busy = true
	lim := l.limit.Load()
	extra := s.plan(now, leaseCap(*lim))
	l.mu.Unlock()

	v := l.reserve(ctx, s.key, s, *lim, 1, extra)[0]
	l.next(ctx, s.key, s)
	return l.refusal(v)
}

// leaseCap is the most one lease may hold: a quarter of the burst.
func leaseCap(lim redis_rate.Limit) int { return max(1, lim.Burst/leaseShare) }

// leaseOf returns surface's lease, made when missing (the one place its
// Redis key is built, so a call spent from the lease builds none); now and then it drops
// the leases that expired while no call was waiting, so a replica keeps
// state only for the surfaces called within a lease's TTL or so. l.mu is
// held.
func (l *Limiter) leaseOf(surface string, now time.Time) *lease {
	if now.Sub(l.swept) > time.Duration(l.ttl.Load()) {
		l.swept = now
		for k, s := range l.surfaces {
			if !s.busy && !now.Before(s.expires) {
				delete(l.surfaces, k)
			}
		}
	}
	s := l.surfaces[surface]
	if s == nil {
		s = &lease{key: l.prefix + surface, size: 1}
		l.surfaces[surface] = s
	}
	return s
}

// next serves the calls that queued during a reservation of key from the
// lease it left, hands those it cannot serve to one more reservation (in the
// background, so the caller that made the last one is not held), or marks
// key idle when none are left.
func (l *Limiter) next(ctx context.Context, key string, s *lease) {
	now := time.Now()
	l.mu.Lock()
	calls := s.calls
	for len(calls) > 0 && s.take(now) {
		calls[0] <- verdict{}
		calls = calls[1:]
	}
	s.calls = nil
	if len(calls) == 0 {
		s.busy = false
		l.mu.Unlock()
		return
	}
	lim := l.limit.Load()
	extra := s.plan(now, leaseCap(*lim))
	l.mu.Unlock()
	go func() {
		ctx := context.WithoutCancel(ctx)
		for i, v := range l.reserve(ctx, key, s, *lim, len(calls), extra) {
			calls[i] <- v
		}
		l.next(ctx, key, s)
	}()
}

// reserve asks key's cell for calls calls plus extra tokens in one round
// trip, keeps what it got beyond the calls as s's lease, and returns each
// call's verdict, in arrival order.
func (l *Limiter) reserve(ctx context.Context, key string, s *lease, lim redis_rate.Limit, calls, extra int) []verdict {
	verdicts := make([]verdict, calls)
	res, err := l.rl.AllowAtMost(ctx, key, lim, calls+extra)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("limit: rate limiter: %w", ctx.Err())
		} else {
			err = apperr.Wrap(err, apperr.Unavailable, "rate limiter is unavailable; retry")
		}
		for i := range verdicts {
			verdicts[i] = verdict{err: err}
		}
		return verdicts
	}
	l.mu.Lock()
	s.fill(time.Now(), res.Allowed, calls, time.Duration(l.ttl.Load()))
	l.mu.Unlock()
	// Past the budget, the next call passes within one emission interval
	// (a reservation that got part of what it asked for has no RetryAfter).
	wait := res.RetryAfter
	if wait <= 0 {
		wait = lim.Period / time.Duration(lim.Rate)
	}
	wait = max(wait, time.Millisecond)
	for i := res.Allowed; i < calls; i++ {
		verdicts[i] = verdict{wait: wait}
	}
	return verdicts
}

// refusal turns a verdict into Allow's answer.
func (l *Limiter) refusal(v verdict) error {
	if v.err != nil || v.wait == 0 {
		return v.err
	}
	lim := l.limit.Load()
	e := apperr.RateLimitedAfter(v.wait, "this surface is calling faster than %d/s sustained (burst %d)", lim.Rate, lim.Burst)
	e.Err = ErrSurfaceRate
	return e
}

// The causes of the 429s of this package, so a caller can tell which limit a
// surface hit (errors.Is): the call rate (Limiter) or the concurrent slots
// (Semaphore).
var (
	ErrSurfaceRate = errors.New("limit: surface call rate exceeded")
	ErrSlotsTaken  = errors.New("limit: every slot of the surface is taken")
)

// spend spends one call of key's GCRA cell. It returns 0 when the call
// passes, else how long until one will; when Redis cannot be asked, a
// retryable 503 naming what refuses rather than letting calls through
// unmetered.
func spend(ctx context.Context, rl *redis_rate.Limiter, key string, lim redis_rate.Limit, what string) (time.Duration, error) {
	res, err := rl.Allow(ctx, key, lim)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("limit: %s: %w", what, ctx.Err())
		}
		return 0, apperr.Wrap(err, apperr.Unavailable, "%s is unavailable; retry", what)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}

// libraryPrefix is what redis_rate puts in front of every key.
const libraryPrefix = "rate:"

// keyspace hands redis_rate a client that drops the library's own key
// prefix, so the limiter's keys live under the deployment's KeyPrefix like
// every other key.
type keyspace struct{ redis.UniversalClient }

// unprefix strips the library's prefix in place: redis_rate builds a fresh
// keys slice on every call.
func unprefix(keys []string) []string {
	for i, k := range keys {
		keys[i] = strings.TrimPrefix(k, libraryPrefix)
	}
	return keys
}

func (k keyspace) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return k.UniversalClient.Eval(ctx, script, unprefix(keys), args...)
}

func (k keyspace) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return k.UniversalClient.EvalSha(ctx, sha1, unprefix(keys), args...)
}

func (k keyspace) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return k.UniversalClient.EvalRO(ctx, script, unprefix(keys), args...)
}

func (k keyspace) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return k.UniversalClient.EvalShaRO(ctx, sha1, unprefix(keys), args...)
}

func (k keyspace) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return k.UniversalClient.Del(ctx, unprefix(keys)...)
}
