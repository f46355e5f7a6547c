package toolrun

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// rowTTL bounds how long a worker reuses a row it loaded for a run (an
// agent, a configured tool, which file a name means; integrations come from
// integration.Lookup, which a change evicts at once): an
// edit applies to runs within this time. Without it every lookup job paid
// three queries before its executor ran.
const rowTTL = 5 * time.Second

// loadTimeout bounds loading one cached row.
const loadTimeout = 10 * time.Second

// ttlCache keeps values for rowTTL. Safe for concurrent use.
type ttlCache[V any] struct {
	m     sync.Map // key → ttlEntry[V]
	loads singleflight.Group
}

type ttlEntry[V any] struct {
	v      V
	loaded time.Time
}

// get returns key's value, loading it with load when absent or stale.
// Callers that find it stale together share one load (a worker's handlers
// all found it stale at once every rowTTL, each taking a database
// connection): load runs with a context of its own, which ends after
// loadTimeout rather than with the caller's, which the others would see.
// Errors are not cached.
func (c *ttlCache[V]) get(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	if e, ok := c.m.Load(key); ok {
		if e := e.(ttlEntry[V]); time.Since(e.loaded) < rowTTL {
			return e.v, nil
		}
	}
	v, err, _ := c.loads.Do(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		v, err := load(ctx)
		if err != nil {
			return v, err
		}
		c.m.Store(key, ttlEntry[V]{v: v, loaded: time.Now()})
		return v, nil
	})
	return v.(V), err
}
