package rdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Broadcast is a pub/sub channel whose every message each live subscriber
// acknowledges after applying it, so that a publisher can wait until every
// replica has applied a change. It lets hot paths keep process-local state
// (cached bindings, revoked sessions) with no Redis round trip per request,
// while a change made on one replica is still enforced by every replica on
// its very next call.
//
// On a Redis Cluster it uses sharded pub/sub (SSUBSCRIBE, SPUBLISH): the
// channel's slot puts every subscriber on one node, so the count SPUBLISH
// answers is every subscriber's, where a plain PUBLISH would count only
// those of the node that took it.
type Broadcast struct {
	client  redis.UniversalClient
	sharded bool
	channel string
	acks    string // prefix of the per-message acknowledgement lists
	log     *slog.Logger
	stop    func() // ends the listener Listen started; nil without one
}

// ackTTL bounds how long an acknowledgement list outlives its publisher.
const ackTTL = time.Minute

// NewBroadcast returns the broadcast named name under keyPrefix.
func NewBroadcast(client redis.UniversalClient, keyPrefix, name string, log *slog.Logger) *Broadcast {
	return &Broadcast{client: client, sharded: IsCluster(client), channel: keyPrefix + name, acks: keyPrefix + name + ":ack:", log: log}
}

// Listen subscribes and calls apply with the payload of every message, then
// acknowledges it. resync runs once the subscription is established and again
// after every reconnection, because messages published while a subscriber was
// disconnected are lost: resync must rebuild the local state from the source
// of truth. Listen returns when the first subscription is confirmed and its
// resync has run (or with an error after timeout); Close ends the listener.
// A Broadcast listens once.
func (b *Broadcast) Listen(apply func(payload string), resync func(context.Context) error, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	var ps *redis.PubSub
	if b.sharded {
		ps = b.client.SSubscribe(ctx, b.channel)
	} else {
		ps = b.client.Subscribe(ctx, b.channel)
	}
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	first := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		confirmed := false
		for m := range msgs {
			switch msg := m.(type) {
			case *redis.Subscription:
				if msg.Kind != "subscribe" && msg.Kind != "ssubscribe" {
					continue
				}
				err := resync(ctx)
				if err != nil {
					b.log.Error("broadcast: resync after subscribing", "channel", b.channel, "error", err.Error())
				}
				if !confirmed {
					confirmed = true
					first <- err
				}
			case *redis.Message:
				id, payload, ok := strings.Cut(msg.Payload, " ")
				if !ok {
					continue
				}
				apply(payload)
				pipe := b.client.Pipeline()
				pipe.RPush(ctx, b.acks+id, 1)
				pipe.Expire(ctx, b.acks+id, ackTTL)
				if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
					b.log.Warn("broadcast: acknowledge", "channel", b.channel, "error", err.Error())
				}
			}
		}
	}()
	stop := func() {
		cancel()
		_ = ps.Close()
		wg.Wait()
	}
	select {
	case err := <-first:
		if err != nil {
			stop()
			return err
		}
		b.stop = stop
		return nil
	case <-time.After(timeout):
		stop()
		return fmt.Errorf("broadcast: no subscription to %s within %s", b.channel, timeout)
	}
}

// Close ends the listener, if any; a nil Broadcast (no Redis) has none.
// Calling it again does nothing.
func (b *Broadcast) Close() {
	if b == nil || b.stop == nil {
		return
	}
	b.stop()
	b.stop = nil
}

// Publish sends payload to every subscriber and waits up to wait for all of
// them to acknowledge it. A subscriber that does not answer in time is
// logged, not an error: its state is then bounded by its own expiry rules.
// When Redis cannot be reached the error is a retryable 503
// (apperr.Unavailable): the change that needed announcing must not happen.
func (b *Broadcast) Publish(ctx context.Context, payload string, wait time.Duration) error {
	id := newMessageID()
	publish := b.client.Publish
	if b.sharded {
		publish = b.client.SPublish
	}
	n, err := publish(ctx, b.channel, id+" "+payload).Result()
	if err != nil {
		return unavailable(fmt.Errorf("broadcast: publish on %s: %w", b.channel, err))
	}
	deadline := time.Now().Add(wait)
	for got := int64(0); got < n; got++ {
		left := time.Until(deadline)
		if left <= 0 {
			b.log.Warn("broadcast: not every subscriber acknowledged", "channel", b.channel, "subscribers", n, "acks", got)
			break
		}
		err := b.client.BLPop(ctx, left, b.acks+id).Err()
		if errors.Is(err, redis.Nil) {
			b.log.Warn("broadcast: not every subscriber acknowledged", "channel", b.channel, "subscribers", n, "acks", got)
			break
		}
		if err != nil {
			return unavailable(fmt.Errorf("broadcast: wait for acknowledgements on %s: %w", b.channel, err))
		}
	}
	b.client.Del(context.WithoutCancel(ctx), b.acks+id)
	return nil
}

// unavailable is the caller's view of a broadcast that could not be made.
func unavailable(err error) error {
	return apperr.Wrap(err, apperr.Unavailable, "a required service is unavailable; retry shortly")
}

func newMessageID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
