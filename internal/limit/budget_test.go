package limit_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/limit"
)

func TestByteBudgetRefusesWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	b := limit.NewByteBudget(100)
	for _, tc := range []struct {
		name  string
		take  int64
		fits  bool
		inUse int64
	}{
		{"a part", 60, true, 60},
		{"more than is left", 41, false, 60},
		{"exactly what is left", 40, true, 100},
		{"nothing is left", 1, false, 100},
	} {
		require.Equal(t, tc.fits, b.Take(tc.take), tc.name)
		require.Equal(t, tc.inUse, b.InUse(), tc.name)
	}
	b.Give(60)
	require.Equal(t, int64(40), b.InUse())
	require.False(t, b.Take(101), "more than the whole budget never fits")
	require.True(t, b.Take(60))
}

func TestByteBudgetUnderContentionNeverOverspends(t *testing.T) {
	t.Parallel()
	const size, each, callers = 1000, 30, 200
	b := limit.NewByteBudget(size)
	var peak, held atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			for range 50 {
				if !b.Take(each) {
					continue
				}
				now := held.Add(each)
				for {
					p := peak.Load()
					if now <= p || peak.CompareAndSwap(p, now) {
						break
					}
				}
				held.Add(-each)
				b.Give(each)
			}
		})
	}
	close(start)
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(size), "the holders never held more than the budget")
	require.Zero(t, b.InUse())
}
