package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
)

// The outcomes of a WorkGate's Acquire, as its Observe func is told them.
const (
	// GateAdmitted: the work got its slots.
	GateAdmitted = "admitted"
	// GateRefusedShare: its workspace held its whole share past the wait (503).
	GateRefusedShare = "workspace_share"
	// GateRefusedProcess: the process held every slot past the wait (503).
	GateRefusedProcess = "process"
	// GateStopped: the caller's context ended while it waited.
	GateStopped = "stopped"
	// GateUnavailable: Redis, which holds the shares, failed (503).
	GateUnavailable = "unavailable"
)

// WorkGate bounds expensive work a process does for many workspaces (a
// page rendered or OCR'd: one subprocess each): at most Process runs at
// once in the process (a Bulkhead), and at most Share runs of one
// workspace at once across the fleet (a Semaphore in Redis keyed by the
// workspace), so a workspace that floods leaves the others free slots to
// start on. A run waits up to Wait for both, its workspace's share first
// (so a run of a workspace over its share never sits on a process slot),
// then is refused with a retryable 503 and a Retry-After, naming the
// workspace's share (its Err ErrSlotsTaken) or the process's bound. It is safe for
// concurrent use; a nil *WorkGate admits everything.
type WorkGate struct {
	what    string
	share   *Semaphore // nil: no Redis, no share
	process *Bulkhead
	wait    time.Duration
	waiting atomic.Int64
	observe func(outcome string, waited time.Duration)
}

// WorkGateOptions configure a WorkGate.
type WorkGateOptions struct {
	// What names the work in the plural, for refusals ("page renderings").
	What string
	// Redis holds the workspaces' shares under keys starting with
	// KeyPrefix; nil leaves only the process bound.
	Redis     redis.UniversalClient
	KeyPrefix string
	// Process is how many runs this process does at once; Share how many
	// one workspace does at once, fleet-wide.
	Process, Share int
	// Wait is how long a run waits for its slots before it is refused.
	Wait time.Duration
	// Observe, when set, is told each Acquire's outcome (the Gate
	// constants) and how long it waited.
	Observe func(outcome string, waited time.Duration)
}

// NewWorkGate returns a WorkGate of o.
func NewWorkGate(o WorkGateOptions) *WorkGate {
	g := &WorkGate{what: o.What, process: NewBulkhead(o.What, o.Process, o.Wait), wait: o.Wait, observe: o.Observe}
	if o.Redis != nil {
		g.share = NewSemaphore(o.Redis, o.KeyPrefix, "work:"+o.What, max(o.Share, 1), time.Minute)
	}
	return g
}

// Acquire takes a slot of workspace's share and one of the process for a
// run that takes at most work (a slot of a holder that dies frees itself
// past it), waiting up to the gate's wait. It returns the release func,
// which the caller must call when the run ends (again does nothing).
func (g *WorkGate) Acquire(ctx context.Context, workspace string, work time.Duration) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	start := time.Now()
	until := start.Add(g.wait)
	dropShare := func() {}
	if g.share != nil {
		key, token := g.share.prefix+workspace, newToken()
		err := g.share.wait(ctx, key, token, until.Add(work), until)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, g.refused(GateStopped, start, g.stopped(ctx))
		case errors.Is(err, ErrSlotsTaken):
			e := apperr.New(apperr.Unavailable, "this workspace already has %d %s in progress, its share; retry", g.share.slots, g.what)
			e.Err, e.RetryAfter = ErrSlotsTaken, refusedRetry(err)
			return nil, g.refused(GateRefusedShare, start, e)
		case err != nil:
			return nil, g.refused(GateUnavailable, start, err)
		}
		dropShare = func() { g.share.drop(ctx, key, token) }
	}
	wctx, cancel := context.WithDeadline(ctx, until)
	releaseProcess, err := g.process.Acquire(wctx)
	cancel()
	if err != nil {
		dropShare()
		if ctx.Err() != nil {
			return nil, g.refused(GateStopped, start, g.stopped(ctx))
		}
		return nil, g.refused(GateRefusedProcess, start, err)
	}
	if g.observe != nil {
		g.observe(GateAdmitted, time.Since(start))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			releaseProcess()
			dropShare()
		})
	}, nil
}

func (g *WorkGate) refused(outcome string, start time.Time, err error) error {
	if g.observe != nil {
		g.observe(outcome, time.Since(start))
	}
	return err
}

func (g *WorkGate) stopped(ctx context.Context) error {
	return apperr.Wrap(ctx.Err(), apperr.Timeout, "waiting for a slot among the %s was stopped", g.what)
}

// InUse reports how many runs hold a process slot (for metrics and tests).
func (g *WorkGate) InUse() int { return g.process.InUse() }

// MaxWait is how long an Acquire may wait; zero for a nil gate.
func (g *WorkGate) MaxWait() time.Duration {
	if g == nil {
		return 0
	}
	return g.wait
}

// Waiting reports how many runs wait for their slots.
func (g *WorkGate) Waiting() int { return int(g.waiting.Load()) }
