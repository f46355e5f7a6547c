package csvlookup

import (
	"container/list"
	"sync"
)

// cache keeps parsed file versions, least recently used first out, within
// a byte budget. A version larger than the budget is used by the lookups
// that asked for it and not kept.
type cache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // of *cacheEntry, most recently used at the front
	entries map[string]*list.Element
}

type cacheEntry struct {
	key   string
	table *table
	size  int64
}

func newCache(budget int64) *cache {
	return &cache{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *cache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
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

// put keeps t, evicting the least recently used versions to stay within the
// budget, and has t report the indexes it builds later so that they count
// too. It must be called before t is used.
func (c *cache) put(key string, t *table) {
	if t.size > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok {
		return
	}
	el := c.order.PushFront(&cacheEntry{key: key, table: t, size: t.size})
	c.entries[key] = el
	c.used += t.size
	t.grew = func(delta int64) { c.grow(key, delta) }
	c.evict(el)
}

// grow adds delta bytes to the version under key (an index it built).
func (c *cache) grow(key string, delta int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return
	}
	el.Value.(*cacheEntry).size += delta
	c.used += delta
	c.evict(el)
}

// evict drops the least recently used versions other than keep until the
// cache fits its budget, and keep itself if it alone does not fit.
func (c *cache) evict(keep *list.Element) {
	for c.used > c.budget {
		victim := c.order.Back()
		if victim == keep {
			victim = keep.Prev()
		}
		if victim == nil {
			victim = keep
		}
		e := victim.Value.(*cacheEntry)
		c.order.Remove(victim)
		delete(c.entries, e.key)
		c.used -= e.size
		if victim == keep {
			return
		}
	}
}
