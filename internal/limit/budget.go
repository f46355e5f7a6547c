package limit

import "sync/atomic"

// ByteBudget bounds the bytes one process holds for a kind of work at once
// (the request bodies a server is reading: internal/web). Take never waits:
// a caller that finds the budget spent is refused at once, so a flood is
// answered quickly instead of queueing in memory. It is safe for concurrent use.
type ByteBudget struct {
	size int64
	used atomic.Int64
}

// NewByteBudget returns a budget of size bytes.
func NewByteBudget(size int64) *ByteBudget {
	return &ByteBudget{size: max(size, 1)}
}

// Take reserves n bytes and reports whether they fit; a caller that got true
// must Give the same n back when it no longer holds them. A request larger
// than the whole budget never fits.
func (b *ByteBudget) Take(n int64) bool {
	for {
		used := b.used.Load()
		if n > b.size-used {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Give returns n bytes Take reserved.
func (b *ByteBudget) Give(n int64) { b.used.Add(-n) }

// InUse reports how many bytes are reserved (for metrics and tests).
func (b *ByteBudget) InUse() int64 { return b.used.Load() }

// Size reports the budget's size.
func (b *ByteBudget) Size() int64 { return b.size }
