package toolrun

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTTLCacheSharesOneLoad: runs that find a row missing at the same time
// load it once, with a context that is not the first caller's: a caller
// whose run was cancelled does not fail the others.
func TestTTLCacheSharesOneLoad(t *testing.T) {
	t.Parallel()
	var c ttlCache[string]
	var loads atomic.Int32
	release := make(chan struct{})
	load := func(ctx context.Context) (string, error) {
		loads.Add(1)
		<-release
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "row", nil
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	const n = 16
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i == 0 {
				ctx = cancelled
			}
			got[i], errs[i] = c.get(ctx, "k", load)
		}()
		if i == 0 {
			// The cancelled caller's load is the one the others share.
			for loads.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	// Let every caller reach the cache before the load finishes.
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != "row" {
			t.Fatalf("caller %d got %q, %v", i, got[i], errs[i])
		}
	}
	if loads.Load() != 1 {
		t.Fatalf("%d concurrent callers loaded the row %d times, want once", n, loads.Load())
	}
	// Cached now; an error is not.
	if v, err := c.get(context.Background(), "k", func(context.Context) (string, error) { return "", errors.New("not called") }); v != "row" || err != nil {
		t.Fatalf("cached row = %q, %v", v, err)
	}
	boom := errors.New("database down")
	if _, err := c.get(context.Background(), "other", func(context.Context) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("failed load = %v", err)
	}
	if v, err := c.get(context.Background(), "other", func(context.Context) (string, error) { return "later", nil }); v != "later" || err != nil {
		t.Fatalf("after a failed load = %q, %v", v, err)
	}
}
