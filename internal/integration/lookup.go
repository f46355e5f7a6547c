package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxStaleness is how long a cached integration is served before it is
// re-read: the bindings' rule (seed 000: "re-read at most every 5 seconds
// per surface, and immediately after it is saved"). A change anywhere
// evicts it at once on every replica; the age bound only matters for a
// replica that missed the announcement.
const MaxStaleness = binding.MaxStaleness

// loadTimeout bounds a read shared by concurrent callers, so one caller's
// cancellation does not fail the others; announceWait bounds how long a
// change waits for every replica to acknowledge the eviction;
// subscribeTimeout bounds New's wait for its subscription.
const loadTimeout, announceWait, subscribeTimeout = 5 * time.Second, 2 * time.Second, 10 * time.Second

// Options are what a Lookup is built from.
type Options struct {
	// DB is the platform database the rows are read from.
	DB *gorm.DB
	// Redis carries the "changed" broadcast that keeps every replica's
	// cache fresh. Nil leaves each process on its own: a cached row is then
	// re-read once it is MaxStaleness old.
	Redis redis.UniversalClient
	// KeyPrefix starts the broadcast's channel and keys (Platform.KeyPrefix).
	KeyPrefix string
	Log       *slog.Logger
	// NowFunc is the clock that ages cached rows; nil is time.Now. Tests
	// set it to age rows without sleeping.
	NowFunc func() time.Time
}

// Lookup is the process's one integration cache. Build one per process
// (internal/platform does), hand it to every reader, and Close it at
// shutdown. It is safe for concurrent use.
type Lookup struct {
	db        *gorm.DB
	broadcast *rdb.Broadcast // nil without Redis: rows then only age out
	log       *slog.Logger
	now       func() time.Time

	mu   sync.RWMutex
	rows map[string]cachedRow
	// generation counts evictions (guarded by mu). A read that began before
	// one may hold the row as it was before the change that caused it, so
	// it does not cache what it read, and no later caller joins it.
	generation uint64
	reads      singleflight.Group
}

// cachedRow is one cached integration; it never changes once stored.
type cachedRow struct {
	row    models.Integration
	readAt time.Time
}

// New builds the lookup and, when it has Redis, listens on the broadcast on
// which every replica announces changes; it returns once the subscription
// is live, so every change announced after New returns evicts this
// process's row before the change's caller gets its answer.
func New(o Options) (*Lookup, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.NowFunc == nil {
		o.NowFunc = time.Now
	}
	l := &Lookup{db: o.DB, log: o.Log, now: o.NowFunc, rows: map[string]cachedRow{}}
	var err error
	if o.Redis != nil {
		l.broadcast = rdb.NewBroadcast(o.Redis, o.KeyPrefix, "integration:changed", l.log)
		err = l.broadcast.Listen(l.forget, l.forgetAll, subscribeTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("integration: %w", err)
	}
	return l, nil
}

// Integration returns the integration with id, whatever its workspace (the
// caller compares WorkspaceID with its own), from the cache while the row
// is younger than MaxStaleness and no change announced it. An unknown or
// malformed id is a not_found error. It implements gateway.Integrations.
func (l *Lookup) Integration(ctx context.Context, id string) (models.Integration, error) {
	l.mu.RLock()
	c, ok := l.rows[id]
	generation := l.generation
	l.mu.RUnlock()
	if ok && l.now().Sub(c.readAt) < MaxStaleness {
		return c.row, nil
	}
	v, err, _ := l.reads.Do(id+"@"+strconv.FormatUint(generation, 10), func() (any, error) {
		return l.read(ctx, id, generation)
	})
	if err != nil {
		return models.Integration{}, err
	}
	return v.(models.Integration), nil
}

// read loads the row and caches it unless an eviction happened since
// generation was taken.
func (l *Lookup) read(ctx context.Context, id string, generation uint64) (models.Integration, error) {
	var row models.Integration
	if !models.IsID(id) {
		return row, apperr.NotFoundf("integration not found")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	defer cancel()
	err := l.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if err := store.NotFound(err, "integration: load", "integration"); err != nil {
		return row, err
	}
	l.mu.Lock()
	if l.generation == generation {
		l.rows[id] = cachedRow{row: row, readAt: l.now()}
	}
	l.mu.Unlock()
	return row, nil
}

// forget drops id's row, or every row when id is "" (forgetAll); the
// broadcast calls it with every announced id.
func (l *Lookup) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.generation++
	if id == "" {
		clear(l.rows)
		return
	}
	delete(l.rows, id)
}

// forgetAll empties the cache: after a reconnection of the broadcast,
// changes announced while it was down were missed.
func (l *Lookup) forgetAll(context.Context) error {
	l.forget("")
	return nil
}

// AnnounceBeforeCommit tells every replica, this one included, that
// integration id is being changed or deleted, from inside the change's
// transaction, and waits (bounded) until each has dropped its row. A Redis
// that cannot carry it is the change's error (503, apperr.Unavailable), so
// the transaction rolls back rather than leave a replica on the old secret
// for up to MaxStaleness. Announce follows the commit.
func (l *Lookup) AnnounceBeforeCommit(ctx context.Context, id string) error {
	if err := l.publish(ctx, id); err != nil {
		return apperr.Wrap(err, apperr.Unavailable, "integration %s was not changed: its change cannot reach every replica while Redis is unavailable; retry shortly", id)
	}
	return nil
}

// Announce tells every replica again, once the change has committed, so a
// row a replica read between AnnounceBeforeCommit and the commit is dropped
// too. A Redis failure here is logged, not returned: the change has
// committed and its first announcement reached every replica.
func (l *Lookup) Announce(ctx context.Context, id string) {
	l.forget(id)
	if err := l.publish(context.WithoutCancel(ctx), id); err != nil {
		l.log.ErrorContext(ctx, "integration: announce change", "integration_id", id, "error", err.Error())
	}
}

// publish broadcasts id and waits for the acknowledgements; without Redis
// there is no other replica to tell.
func (l *Lookup) publish(ctx context.Context, id string) error {
	if l.broadcast == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, announceWait+time.Second)
	defer cancel()
	return l.broadcast.Publish(ctx, id, announceWait)
}

// Close stops listening for changes.
func (l *Lookup) Close() {
	l.broadcast.Close()
}
