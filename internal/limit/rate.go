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
// Concurrent calls of one surface on one replica share a Redis round trip:
// while a surface's spend is in flight, the calls that arrive queue, and the
// next spend asks for all of them at once (AllowAtMost). The queued calls
// pass in arrival order as far as the budget goes and the rest are refused,
// as if they had been made one after the other at that instant, so the
// limit holds across replicas exactly as with one round trip per call
// (a batch that ends on a fraction of a call forfeits that fraction: never
// looser than one call at a time).
type Limiter struct {
	rl     *redis_rate.Limiter
	prefix string
	limit  atomic.Pointer[redis_rate.Limit]

	mu      sync.Mutex
	pending map[string]*queue // surfaces with a spend in flight
}

// queue holds the calls of one surface waiting for the next spend.
type queue struct{ calls []chan verdict }

// verdict is one call's share of a spend: wait 0 passes.
type verdict struct {
	wait time.Duration
	err  error
}

// NewLimiter returns a Limiter at SurfaceRate whose keys start with keyPrefix.
func NewLimiter(rc redis.UniversalClient, keyPrefix string) *Limiter {
	l := &Limiter{rl: redis_rate.NewLimiter(keyspace{rc}), prefix: keyPrefix + "rate:surface:", pending: map[string]*queue{}}
	l.SetRate(SurfaceRate)
	return l
}

// SetRate changes the rate of every surface from the next call on (tests
// of other packages raise it so that their calls are not refused).
func (l *Limiter) SetRate(r Rate) {
	lim := redis_rate.Limit{Rate: max(r.PerSecond, 1), Burst: max(r.Burst, 1), Period: time.Second}
	l.limit.Store(&lim)
}

// Rate returns the current rate.
func (l *Limiter) Rate() Rate {
	lim := l.limit.Load()
	return Rate{PerSecond: lim.Rate, Burst: lim.Burst}
}

// Allow spends one call of surface's budget. It returns nil, or a 429
// (apperr.RateLimited) whose RetryAfter is when the next call will pass.
// When Redis cannot be asked it refuses with a retryable 503 rather than
// letting calls through unmetered.
func (l *Limiter) Allow(ctx context.Context, surface string) error {
	key := l.prefix + surface
	l.mu.Lock()
	if q, busy := l.pending[key]; busy {
		ch := make(chan verdict, 1)
		q.calls = append(q.calls, ch)
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
	l.pending[key] = &queue{}
	l.mu.Unlock()

	lim := l.limit.Load()
	wait, err := spend(ctx, l.rl, key, *lim, "rate limiter")
	l.next(ctx, key)
	return l.refusal(verdict{wait, err})
}

// next hands the calls that queued during a spend of key to one more spend
// (in the background, so the caller that made the last one is not held), or
// marks key idle when none did.
func (l *Limiter) next(ctx context.Context, key string) {
	l.mu.Lock()
	q := l.pending[key]
	if len(q.calls) == 0 {
		delete(l.pending, key)
		l.mu.Unlock()
		return
	}
	l.pending[key] = &queue{}
	l.mu.Unlock()
	go func() {
		l.spendBatch(context.WithoutCancel(ctx), key, q.calls)
		l.next(ctx, key)
	}()
}

// spendBatch spends len(calls) calls of key in one round trip and tells
// each call its verdict, in arrival order.
func (l *Limiter) spendBatch(ctx context.Context, key string, calls []chan verdict) {
	lim := l.limit.Load()
	if len(calls) == 1 {
		wait, err := spend(ctx, l.rl, key, *lim, "rate limiter")
		calls[0] <- verdict{wait, err}
		return
	}
	res, err := l.rl.AllowAtMost(ctx, key, *lim, len(calls))
	if err != nil {
		err = apperr.Wrap(err, apperr.Unavailable, "rate limiter is unavailable; retry")
		for _, ch := range calls {
			ch <- verdict{err: err}
		}
		return
	}
	// Past the budget, the next call passes within one emission interval.
	wait := res.RetryAfter
	if wait <= 0 {
		wait = lim.Period / time.Duration(lim.Rate)
	}
	wait = max(wait, time.Millisecond)
	for i, ch := range calls {
		if i < res.Allowed {
			ch <- verdict{}
		} else {
			ch <- verdict{wait: wait}
		}
	}
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
