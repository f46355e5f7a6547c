package runtime

import (
	"context"
	"fmt"
	"sync"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/models"
)

// Feed group-commits the feed rows of /write: each call still waits until
// its own row is committed (nothing is acknowledged that could be lost), but
// rows that arrive together share one INSERT and one commit, so a busy
// surface costs the platform database a fraction of a round trip per write.
type Feed struct {
	db    *gorm.DB
	queue chan feedItem
	wg    sync.WaitGroup

	mu     sync.RWMutex // guards closed against a send on the closed queue
	closed bool
}

type feedItem struct {
	row  models.FeedEvent
	done chan error
}

// Group commit sizing: rows per INSERT at most, and concurrent INSERTs.
const (
	feedBatch   = 256
	feedWorkers = 1
)

// NewFeed starts the writers; Close stops them after the queued rows.
func NewFeed(db *gorm.DB) *Feed {
	f := &Feed{db: db, queue: make(chan feedItem, feedBatch*feedWorkers)}
	for range feedWorkers {
		f.wg.Add(1)
		go f.work()
	}
	return f
}

// Append writes row and returns once it is committed (or failed).
func (f *Feed) Append(ctx context.Context, row models.FeedEvent) error {
	item := feedItem{row: row, done: make(chan error, 1)}
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		return apperr.New(apperr.Unavailable, "the server is shutting down; retry")
	}
	select {
	case f.queue <- item:
	case <-ctx.Done():
		f.mu.RUnlock()
		return ctx.Err()
	}
	f.mu.RUnlock()
	return <-item.done
}

// Close stops the writers once every queued row is written.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	close(f.queue)
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *Feed) work() {
	defer f.wg.Done()
	for first := range f.queue {
		batch := []feedItem{first}
	drain:
		for len(batch) < feedBatch {
			select {
			case it, ok := <-f.queue:
				if !ok {
					break drain
				}
				batch = append(batch, it)
			default:
				break drain
			}
		}
		f.flush(batch)
	}
}

// insert writes rows in one statement (feed.Append keeps the events cursor
// gap-free).
func (f *Feed) insert(rows ...models.FeedEvent) error {
	return feed.Append(context.Background(), f.db, rows...)
}

// flush inserts a batch in one statement. Should it fail, each row is
// retried on its own so that one bad row (a task deleted meanwhile) fails
// only its own call.
func (f *Feed) flush(batch []feedItem) {
	rows := make([]models.FeedEvent, len(batch))
	for i, it := range batch {
		rows[i] = it.row
	}
	err := f.insert(rows...)
	if err == nil || len(batch) == 1 {
		if err != nil {
			err = fmt.Errorf("runtime: record feed: %w", err)
		}
		for _, it := range batch {
			it.done <- err
		}
		return
	}
	for _, it := range batch {
		if err := f.insert(it.row); err != nil {
			it.done <- fmt.Errorf("runtime: record feed: %w", err)
			continue
		}
		it.done <- nil
	}
}
