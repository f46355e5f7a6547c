package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func newTask(t *testing.T, st *store.Store) string {
	t.Helper()
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	return task.ID
}

func row(taskID, name string) models.FeedEvent {
	return models.FeedEvent{TaskID: taskID, Type: models.FeedAgentAction, Name: name}
}

// TestAReaderNeverSkipsAnIdThatCommitsLate: id k is drawn by a transaction
// that is still open while id k+1 commits; a reader must not return k+1
// (moving a poller's cursor past k) before k is committed.
func TestAReaderNeverSkipsAnIdThatCommitsLate(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	task := newTask(t, st)
	ctx := context.Background()

	slow := st.DB.Begin()
	t.Cleanup(func() { slow.Rollback() }) // before the schema is dropped, should the test fail early
	require.NoError(t, feed.Insert(ctx, slow, false, row(task, "first")))
	require.NoError(t, st.DB.Transaction(func(tx *gorm.DB) error { return feed.Insert(ctx, tx, false, row(task, "second")) }))

	got := make(chan []models.FeedEvent, 1)
	go func() {
		rows, err := feed.Since(ctx, st.DB, task, 0, 100)
		if err != nil {
			t.Error(err)
		}
		got <- rows
	}()
	select {
	case rows := <-got:
		t.Fatalf("the reader answered while id %d was uncommitted: %v", rows[0].ID, rows)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, slow.Commit().Error)
	rows := <-got
	require.Len(t, rows, 2)
	require.Equal(t, []string{"first", "second"}, []string{rows[0].Name, rows[1].Name})
	require.Less(t, rows[0].ID, rows[1].ID)
}

func TestInsertDedupesAndPagesOnBothDialects(t *testing.T) {
	t.Parallel()
	for name, st := range map[string]*store.Store{"postgres": testkit.Tx(t), "sqlite": testkit.SQLite(t)} {
		t.Run(name, func(t *testing.T) {
			task := newTask(t, st)
			ctx := context.Background()
			key := "event-1"
			dup := row(task, "resumed")
			dup.DedupeKey = &key
			for range 2 {
				require.NoError(t, st.DB.Transaction(func(tx *gorm.DB) error {
					return feed.Insert(ctx, tx, true, dup, row(task, "other"))
				}))
			}
			all, err := feed.Since(ctx, st.DB, task, 0, 100)
			require.NoError(t, err)
			require.Len(t, all, 3, "the dedupe key inserted once, the other row twice")
			page, err := feed.Since(ctx, st.DB, task, all[0].ID, 1)
			require.NoError(t, err)
			require.Equal(t, []int64{all[1].ID}, []int64{page[0].ID})
		})
	}
}

// TestOnlySetDedupeKeysAreIndexed: on Postgres the unique index of
// dedupe_key is partial, so the feed rows that set no key (every /write's)
// take no entry in it, and a deduping insert names its predicate (which
// TestInsertDedupesAndPagesOnBothDialects runs).
func TestOnlySetDedupeKeysAreIndexed(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	var pred string
	require.NoError(t, st.DB.Raw(`SELECT coalesce(pg_get_expr(indpred, indrelid), '') FROM pg_index
		WHERE indrelid = 'feed_events'::regclass AND indisunique AND indkey::text = (
			SELECT attnum::text FROM pg_attribute WHERE attrelid = 'feed_events'::regclass AND attname = 'dedupe_key')`).Scan(&pred).Error)
	require.Equal(t, "(dedupe_key IS NOT NULL)", pred)
}

// TestNoRowOutlivesItsTask: a task's delete and a feed write on it,
// whichever goes first, leave no feed row of the deleted task: the write
// holds the task (the delete waits, then deletes its rows), or the delete
// went first (the write is refused).
func TestNoRowOutlivesItsTask(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	count := func(task string) int64 {
		var n int64
		require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ?", task).Count(&n).Error)
		return n
	}

	// The write first: the delete waits for its commit.
	task := newTask(t, st)
	writer := st.DB.Begin()
	t.Cleanup(func() { writer.Rollback() })
	require.NoError(t, feed.Insert(ctx, writer, false, row(task, "held")))
	deleted := make(chan error, 1)
	go func() { deleted <- st.DB.Delete(&models.Task{}, "id = ?", task).Error }()
	select {
	case err := <-deleted:
		t.Fatalf("the delete did not wait for the write: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, writer.Commit().Error)
	require.NoError(t, <-deleted)
	require.Zero(t, count(task), "the delete took the committed row with it")

	// The delete first: the write waits, then is refused.
	task = newTask(t, st)
	deleter := st.DB.Begin()
	t.Cleanup(func() { deleter.Rollback() })
	require.NoError(t, deleter.Delete(&models.Task{}, "id = ?", task).Error)
	inserted := make(chan error, 1)
	go func() {
		inserted <- st.DB.Transaction(func(tx *gorm.DB) error { return feed.Insert(ctx, tx, false, row(task, "late")) })
	}()
	select {
	case err := <-inserted:
		t.Fatalf("the write did not wait for the delete: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, deleter.Commit().Error)
	require.ErrorIs(t, <-inserted, feed.ErrTaskGone)
	require.Zero(t, count(task))

	require.ErrorIs(t, st.DB.Transaction(func(tx *gorm.DB) error { return feed.Insert(ctx, tx, false, row(models.NewID(), "never")) }),
		feed.ErrTaskGone, "a task that never was")
}
