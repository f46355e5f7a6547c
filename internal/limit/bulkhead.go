package limit

import (
	"context"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
)

// BulkheadRetryAfter is what a call refused by a full bulkhead is told to
// wait: slots free as fast as the calls holding them finish.
const BulkheadRetryAfter = time.Second

// Bulkhead bounds the concurrent calls of one kind in one process, so a slow
// upstream or a slow worker fleet cannot take every goroutine and
// connection. A process has two (docs/operators.md#configuration): one for
// lookups (/read on an http_calls op, rest reads) and one for /run, whose
// calls hold a slot for a whole job. It is safe for concurrent use.
type Bulkhead struct {
	slots   chan struct{}
	wait    time.Duration
	refusal string
}

// NewBulkhead returns a bulkhead of size slots whose callers wait up to wait
// for one (Config.LookupConcurrency and Config.LookupWait, or
// Config.RunConcurrency and Config.RunWait). calls names what it bounds, in
// the plural ("lookups", "runs"), for the refusal's message.
func NewBulkhead(calls string, size int, wait time.Duration) *Bulkhead {
	return &Bulkhead{slots: make(chan struct{}, max(size, 1)), wait: wait, refusal: "too many " + calls + " in progress; retry"}
}

// Acquire takes a slot, waiting up to the bulkhead's wait (or until ctx
// ends) for one to free. It returns a release func, which the caller must
// call when its call ends (calling it again does nothing), or a retryable
// 503 (apperr.Unavailable) when no slot freed in time.
func (b *Bulkhead) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case b.slots <- struct{}{}:
		return b.releaser(), nil
	default:
	}
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	select {
	case b.slots <- struct{}{}:
		return b.releaser(), nil
	case <-timer.C:
		e := apperr.New(apperr.Unavailable, "%s", b.refusal)
		e.RetryAfter = BulkheadRetryAfter
		return nil, e
	case <-ctx.Done():
		e := apperr.Wrap(ctx.Err(), apperr.Unavailable, "%s", b.refusal)
		e.RetryAfter = BulkheadRetryAfter
		return nil, e
	}
}

// InUse reports how many slots are taken (for metrics and tests).
func (b *Bulkhead) InUse() int { return len(b.slots) }

func (b *Bulkhead) releaser() func() {
	var once sync.Once
	return func() { once.Do(func() { <-b.slots }) }
}
