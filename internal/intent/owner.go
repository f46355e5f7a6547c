package intent

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// ownerLockClass is the first key of the two-key advisory locks owners hold
// (the second is hashtext(owner id)). Two-key locks never collide with the
// one-key locks of the feed and of migrations.
const ownerLockClass = 7216401

// ownerCheckInterval is how often an owner checks that its lock connection
// is still alive; when it is not (a restart of the platform database, a
// terminated backend), the owner takes its lock again, on the same id, so
// that the intents it has in flight stay its own and their completions
// land. Only when another holds that lock (a sweep testing it at that
// moment, which may then record them as unknown) does it take a fresh id.
// A sweep leaves the batches that a restart cut from their owner's lock
// alone for RestartGrace, which is several of these checks.
const ownerCheckInterval = 2 * time.Second

// retakeTries is how many times an owner tries to take its lock again on
// its own id, ownerRetakePause apart, before it takes a fresh id.
const (
	retakeTries      = 10
	ownerRetakePause = 100 * time.Millisecond
)

// Owner is the identity a process's write intents carry. On Postgres it is
// alive exactly as long as its advisory lock is held; Close releases it.
// It is safe for concurrent use.
type Owner struct {
	st  *store.Store
	log *slog.Logger

	mu   sync.Mutex
	id   string
	conn *sql.Conn // holds the lock (Postgres)

	stop chan struct{}
	done chan struct{}
}

// Claim returns a new owner of st. On Postgres it holds a connection of its
// own (with the owner's lock) until Close.
func Claim(ctx context.Context, st *store.Store, log *slog.Logger) (*Owner, error) {
	o := &Owner{st: st, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	if err := o.claim(ctx); err != nil {
		return nil, err
	}
	if st.Dialect != config.Postgres {
		close(o.done)
		return o, nil
	}
	go o.keep()
	return o, nil
}

// ID is the owner id to write on intents now.
func (o *Owner) ID() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.id
}

// claim takes a fresh id (and its lock on Postgres).
func (o *Owner) claim(ctx context.Context) error {
	return o.take(ctx, "")
}

// take takes the lock of id, or of a fresh id when id is "" or its lock
// stays taken for retakeTries tries (another owner's id hashing alike, or a
// sweep testing it).
func (o *Owner) take(ctx context.Context, id string) error {
	if o.st.Dialect != config.Postgres {
		o.mu.Lock()
		o.id = models.NewID()
		o.mu.Unlock()
		return nil
	}
	sqlDB := o.st.SQL()
	if sqlDB == nil {
		return fmt.Errorf("intent: the store has no pool to hold an owner lock on")
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("intent: owner connection: %w", err)
	}
	for try := 0; ; try++ {
		if id == "" || try >= retakeTries {
			id = models.NewID()
		} else if try > 0 {
			time.Sleep(ownerRetakePause)
		}
		var ok bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", ownerLockClass, id).Scan(&ok); err != nil {
			_ = conn.Close()
			return fmt.Errorf("intent: take owner lock: %w", err)
		}
		if ok { // else taken: try again, or draw again
			o.mu.Lock()
			old := o.conn
			o.id, o.conn = id, conn
			o.mu.Unlock()
			if old != nil {
				store.DiscardConn(old)
			}
			return nil
		}
	}
}

// keep checks the lock connection and claims a fresh id when it broke.
func (o *Owner) keep() {
	defer close(o.done)
	tick := time.NewTicker(ownerCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		o.mu.Lock()
		conn := o.conn
		o.mu.Unlock()
		if err := conn.PingContext(ctx); err != nil {
			old := o.ID()
			if err := o.take(ctx, old); err != nil {
				o.log.Warn("intent: owner lock lost and not retaken yet", "error", err.Error())
			} else if o.ID() == old {
				o.log.Warn("intent: owner lock connection broke; the lock is taken again")
			} else {
				o.log.Warn("intent: owner lock connection broke and its lock was taken; writes now carry a new owner id")
			}
		}
		cancel()
	}
}

// Close releases the owner: its lock connection is closed, so a Sweep may
// record whatever intents it left.
func (o *Owner) Close() {
	select {
	case <-o.stop:
		return
	default:
		close(o.stop)
	}
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn != nil {
		// The lock is released before Close returns (a closed connection
		// releases it only once its backend has ended), so a Sweep that
		// follows may record this owner's intents at once. A lock left on
		// a pooled connection would keep this owner looking alive: the
		// connection is closed, not returned.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = o.conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1, hashtext($2))", ownerLockClass, o.id)
		cancel()
		store.DiscardConn(o.conn)
		o.conn = nil
	}
}
