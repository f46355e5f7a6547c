package limit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The lease's rules, step by step: what a replica reserves next and what it
// may spend locally (docs/performance.md#the-limiters-lease).
func TestLeaseSizesItselfFromHowTheLastOneWent(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// step is one call on the lease at a time: it spends a token when it
	// holds one, else plans a reservation of one call and fills it with
	// what the cell granted.
	type step struct {
		ms      int // milliseconds after the first call
		granted int // what Redis grants if the step reserves
	}
	ttl := int(LeaseTTL / time.Millisecond)
	cases := []struct {
		name  string
		most  int // the lease cap (a quarter of the burst)
		steps []step
		// per step: 0 spent locally, else the calls+extra it asked for
		asked      []int
		tokensLeft int
	}{
		{
			name:  "a lone call asks for itself only",
			most:  5,
			steps: []step{{0, 1}},
			asked: []int{1},
		},
		{
			name:  "used up within the TTL, each lease doubles up to the cap",
			most:  5,
			steps: []step{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 0}, {5, 0}, {6, 0}, {7, 5}, {8, 0}, {9, 0}, {10, 0}, {11, 0}, {12, 5}},
			asked: []int{1, 2, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0, 5},
			// the last reservation's 4 spare tokens
			tokensLeft: 4,
		},
		{
			name: "a lease that expires unspent is forfeited and the next asks for what was spent",
			most: 5,
			// 1, 2, 4 (its call and 2 of its 3 spare), then a call past the TTL
			steps:      []step{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 0}, {5, 0}, {ttl + 3, 3}},
			asked:      []int{1, 2, 0, 4, 0, 0, 3},
			tokensLeft: 2,
		},
		{
			name:  "a lease used up but expired by the next call keeps its size",
			most:  5,
			steps: []step{{0, 1}, {1, 2}, {2, 0}, {ttl + 2, 2}},
			asked: []int{1, 2, 0, 2},
			// 2 asked, 2 granted: one for the call, one spare
			tokensLeft: 1,
		},
		{
			name:  "a cell that grants less than asked leaves a smaller lease, or none",
			most:  5,
			steps: []step{{0, 1}, {1, 1}, {2, 1}, {3, 3}, {4, 0}, {5, 0}},
			// the second reservation got only the call's token: its lease
			// was empty at once, so the next one doubles again
			asked:      []int{1, 2, 4, 5, 0, 0},
			tokensLeft: 0,
		},
		{
			name:  "a burst under 8 leases one call at a time",
			most:  1,
			steps: []step{{0, 1}, {1, 1}, {2, 1}},
			asked: []int{1, 1, 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &lease{size: 1}
			require.Len(t, tc.asked, len(tc.steps))
			for i, st := range tc.steps {
				now := t0.Add(time.Duration(st.ms) * time.Millisecond)
				if s.take(now) {
					require.Zero(t, tc.asked[i], "step %d spent a leased token", i)
					continue
				}
				asked := 1 + s.plan(now, tc.most)
				require.Equal(t, tc.asked[i], asked, "step %d", i)
				s.fill(now, min(st.granted, asked), 1, LeaseTTL)
			}
			require.Equal(t, tc.tokensLeft, s.tokens)
		})
	}
}

// An expired lease's tokens are never spent: a call is admitted at most
// LeaseTTL after its token was reserved.
func TestALeasedTokenIsNotSpentPastItsTTL(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := &lease{size: 1}
	s.fill(now, 5, 1, LeaseTTL)
	require.True(t, s.take(now.Add(LeaseTTL-time.Millisecond)))
	require.False(t, s.take(now.Add(LeaseTTL)))
	require.Equal(t, 3, s.tokens, "held until the next reservation forfeits them")
	require.Equal(t, 1, s.plan(now.Add(LeaseTTL), 5), "its call and one spare spent: the next asks for 2")
	require.Zero(t, s.tokens)
}
