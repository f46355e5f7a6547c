package toolrun

import (
	"sync"
	"time"
)

// rowTTL bounds how long a worker reuses a row it loaded for a run (an
// agent, a configured tool, an integration, which file a name means): an
// edit applies to runs within this time. Without it every lookup job paid
// three queries before its executor ran.
const rowTTL = 5 * time.Second

// ttlCache keeps values for rowTTL. Safe for concurrent use.
type ttlCache[V any] struct {
	m sync.Map // key → ttlEntry[V]
}

type ttlEntry[V any] struct {
	v      V
	loaded time.Time
}

// get returns key's value, loading it with load when absent or stale.
// Errors are not cached.
func (c *ttlCache[V]) get(key string, load func() (V, error)) (V, error) {
	if e, ok := c.m.Load(key); ok {
		if e := e.(ttlEntry[V]); time.Since(e.loaded) < rowTTL {
			return e.v, nil
		}
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.m.Store(key, ttlEntry[V]{v: v, loaded: time.Now()})
	return v, nil
}
