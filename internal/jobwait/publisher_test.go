package jobwait

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/testkit"
)

// TestPublisherStoresAndPublishesEveryOutcomeOnce: outcomes published at
// once from many handlers are each stored under their own key with their
// TTL and published on their own channel, once; a second outcome for a key
// changes nothing.
func TestPublisherStoresAndPublishesEveryOutcomeOnce(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	ctx := context.Background()
	k := keys(env.Prefix)
	ps := env.Client.PSubscribe(ctx, k.channelPattern())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 200
	pub := newPublisher(env.Client)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint(i)
			errs[i] = pub.publish(&pendingOutcome{key: k.result(id), channel: k.channel(id), msg: []byte("outcome " + id), ttlMS: 60_000})
		}()
	}
	wg.Wait()
	heard := map[string]string{}
	for len(heard) < n {
		m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatalf("heard %d of %d outcomes: %v", len(heard), n, err)
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			t.Fatalf("pub/sub sent %T", m)
		}
		id := k.idOf(msg.Channel)
		if _, dup := heard[id]; dup {
			t.Fatalf("outcome %s published twice", id)
		}
		heard[id] = msg.Payload
	}
	for i := range n {
		id := fmt.Sprint(i)
		if errs[i] != nil {
			t.Fatalf("publish %s: %v", id, errs[i])
		}
		if heard[id] != "outcome "+id {
			t.Fatalf("channel of %s carried %q", id, heard[id])
		}
		stored, err := env.Client.Get(ctx, k.result(id)).Result()
		if err != nil || stored != "outcome "+id {
			t.Fatalf("stored outcome of %s = %q, %v", id, stored, err)
		}
		if ttl := env.Client.PTTL(ctx, k.result(id)).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("outcome %s expires in %v, want within a minute", id, ttl)
		}
	}
	// A second run of a job finds its outcome stored: nothing changes.
	if err := pub.publish(&pendingOutcome{key: k.result("0"), channel: k.channel("0"), msg: []byte("again"), ttlMS: 60_000}); err != nil {
		t.Fatal(err)
	}
	if stored := env.Client.Get(ctx, k.result("0")).Val(); stored != "outcome 0" {
		t.Fatalf("a second outcome replaced the first: %q", stored)
	}
}

// TestPublisherBatchSurvivesAFlushedScriptCache: a batch sent after Redis
// lost its scripts (a restart) loads the script again and stores every
// outcome of the batch.
//
// Not parallel: another test's script call would load it again.
func TestPublisherBatchSurvivesAFlushedScriptCache(t *testing.T) {
	env := testkit.Redis(t)
	ctx := context.Background()
	k := keys(env.Prefix)
	if err := env.Client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(env.Client)
	batch := make([]*pendingOutcome, 5)
	for i := range batch {
		id := fmt.Sprint("flushed", i)
		batch[i] = &pendingOutcome{key: k.result(id), channel: k.channel(id), msg: []byte(id), ttlMS: 60_000}
	}
	for i, err := range pub.send(batch) {
		if err != nil {
			t.Fatalf("outcome %d: %v", i, err)
		}
	}
	for _, p := range batch {
		if got := env.Client.Get(ctx, p.key).Val(); got != string(p.msg) {
			t.Fatalf("%s = %q, want %q", p.key, got, p.msg)
		}
	}
}
