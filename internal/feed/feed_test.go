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

// TestAppendTakesTheTaskLockBeforeDrawingAnId: while a reader holds a task's
// lock, a one-statement Append must wait without drawing an id; ids drawn
// and committed behind a reader's back are what a cursor would skip.
func TestAppendTakesTheTaskLockBeforeDrawingAnId(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	task := newTask(t, st)
	ctx := context.Background()
	require.NoError(t, feed.Append(ctx, st.DB, row(task, "zero"))) // the sequence has been called once

	lastValue := func() int64 {
		var v int64
		require.NoError(t, st.DB.Raw("SELECT last_value FROM feed_events_id_seq").Scan(&v).Error)
		return v
	}
	before := lastValue()
	reader := st.DB.Begin()
	t.Cleanup(func() { reader.Rollback() })
	require.NoError(t, reader.Exec("SELECT pg_advisory_xact_lock(hashtext('feed:' || ?::text))", task).Error)

	done := make(chan error, 1)
	go func() { done <- feed.Append(ctx, st.DB, row(task, "one"), row(task, "two")) }()
	select {
	case err := <-done:
		t.Fatalf("Append finished while a reader held the task lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.Equal(t, before, lastValue(), "no id was drawn while waiting for the lock")
	require.NoError(t, reader.Commit().Error)
	require.NoError(t, <-done)
	rows, err := feed.Since(ctx, st.DB, task, 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	require.Equal(t, "two", rows[2].Name)
}
