package jobwait

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// publisher stores and publishes outcomes (publishScript), coalescing the
// outcomes of handlers that finish while a round trip is in flight into one
// pipelined round trip: an outcome that finds none in flight goes at once,
// the others wait for the one in flight and then go together. Safe for
// concurrent use.
//
// There is no goroutine of its own: the caller whose outcome finds the
// publisher idle sends what is waiting, then hands the turn to the first
// outcome queued meanwhile, whose caller sends the next batch.
type publisher struct {
	rc redis.UniversalClient

	mu      sync.Mutex
	sending bool              // a batch is in flight
	queue   []*pendingOutcome // waiting for the next batch
}

// pendingOutcome is one outcome to store and publish.
type pendingOutcome struct {
	key, channel string
	msg          []byte
	ttlMS        int64
	// done carries the outcome's error, or the turn to send the next batch.
	done chan publishDone
}

type publishDone struct {
	err  error
	turn bool
}

func newPublisher(rc redis.UniversalClient) *publisher { return &publisher{rc: rc} }

// publish stores p.msg under p.key unless an outcome is stored there
// already, and only then publishes it on p.channel. It returns once p is
// sent (within publishTimeout of its batch's start).
func (b *publisher) publish(p *pendingOutcome) error {
	p.done = make(chan publishDone, 1)
	b.mu.Lock()
	b.queue = append(b.queue, p)
	turn := !b.sending
	b.sending = true
	b.mu.Unlock()
	if !turn {
		d := <-p.done
		if !d.turn {
			return d.err
		}
	}
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()

	errs := b.send(batch)
	var mine error
	for i, q := range batch {
		if q == p {
			mine = errs[i]
		} else {
			q.done <- publishDone{err: errs[i]}
		}
	}

	b.mu.Lock()
	if len(b.queue) == 0 {
		b.sending = false
		b.mu.Unlock()
		return mine
	}
	next := b.queue[0]
	b.mu.Unlock()
	next.done <- publishDone{turn: true}
	return mine
}

// send runs publishScript for each outcome of batch in one round trip (a
// lone outcome as a plain script call) and returns their errors in order.
func (b *publisher) send(batch []*pendingOutcome) []error {
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	errs := make([]error, len(batch))
	if len(batch) == 1 {
		p := batch[0]
		errs[0] = scriptErr(publishScript.Run(ctx, b.rc, []string{p.key}, p.msg, p.ttlMS, p.channel).Err())
		return errs
	}
	cmds := make([]*redis.Cmd, len(batch))
	_, _ = b.rc.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range batch {
			cmds[i] = publishScript.EvalSha(ctx, pipe, []string{p.key}, p.msg, p.ttlMS, p.channel)
		}
		return nil
	})
	var retry []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			retry = append(retry, i)
			continue
		}
		errs[i] = scriptErr(c.Err())
	}
	if len(retry) == 0 {
		return errs
	}
	// Redis lost its scripts (a restart, SCRIPT FLUSH): send the source
	// once and the rest by hash.
	if err := publishScript.Load(ctx, b.rc).Err(); err != nil {
		for _, i := range retry {
			errs[i] = err
		}
		return errs
	}
	_, _ = b.rc.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, i := range retry {
			p := batch[i]
			cmds[i] = publishScript.EvalSha(ctx, pipe, []string{p.key}, p.msg, p.ttlMS, p.channel)
		}
		return nil
	})
	for _, i := range retry {
		errs[i] = scriptErr(cmds[i].Err())
	}
	return errs
}

// scriptErr is publishScript's error: its nil reply (the script returns a
// number, but an outcome stored already is no error either way) is none.
func scriptErr(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
