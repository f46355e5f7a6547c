package csvlookup

import (
	"container/list"
	"sync"
)

// cache keeps parsed file versions, least recently used first out, within
// a byte budget that the parses and index builds in flight share with it:
// each reserves what it will allocate before allocating it, so that the
// cached versions and the work in flight never hold more than the budget
// together.
type cache struct {
	mu       sync.Mutex
	freed    *sync.Cond // broadcast when a reservation ends
	budget   int64
	used     int64      // the cached versions'
	reserved int64      // the work in flight's
	peak     int64      // the most used+reserved has been
	order    *list.List // of *cacheEntry, most recently used at the front
	entries  map[string]*list.Element
}

type cacheEntry struct {
	key   string
	table *table
	size  int64
}

func newCache(budget int64) *cache {
	c := &cache{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
	c.freed = sync.NewCond(&c.mu)
	return c
}

func (c *cache) bytes() (used, peak int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.peak
}

func (c *cache) get(key string) *table {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).table
}

// reserve takes n bytes of the budget for work about to allocate them,
// evicting the least recently used versions to make room and, when that is
// not enough, waiting for other work's reservations to end. n larger than
// the whole budget is errOverBudget. A caller holds no reservation while it
// waits, so waiters cannot deadlock: the work they wait for is allocating
// what it already reserved, and ends.
func (c *cache) reserve(n int64) error {
	if n > c.budget {
		return errOverBudget
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for c.used+c.reserved+n > c.budget && c.order.Len() > 0 {
			c.remove(c.order.Back())
		}
		if c.used+c.reserved+n <= c.budget {
			c.reserved += n
			c.peak = max(c.peak, c.used+c.reserved)
			return nil
		}
		c.freed.Wait()
	}
}

// release ends a reservation of n bytes whose memory was not kept.
func (c *cache) release(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reserved -= n
	c.freed.Broadcast()
}

// put keeps t in place of the reservation of t.size bytes its parse made,
// and has t reserve and report the indexes it builds later.
func (c *cache) put(key string, t *table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reserved -= t.size
	c.freed.Broadcast()
	if _, ok := c.entries[key]; ok {
		return
	}
	el := c.order.PushFront(&cacheEntry{key: key, table: t, size: t.size})
	c.entries[key] = el
	c.used += t.size
	t.reserve = c.reserve
	t.grew = func(delta int64) { c.grow(key, delta) }
}

// grow turns a reservation of delta bytes (an index built for the version
// under key) into part of that version's size; a version evicted meanwhile
// keeps nothing, and its index goes with its last lookup.
func (c *cache) grow(key string, delta int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reserved -= delta
	c.freed.Broadcast()
	el, ok := c.entries[key]
	if !ok {
		return
	}
	el.Value.(*cacheEntry).size += delta
	c.used += delta
}

// remove drops a cached version.
func (c *cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.used -= e.size
}
