package datasource_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestALostAnswerIsNeverTakenForARefusal: the runtime records a write as
// failed (no feed row) only when AnswerLost is false, so a write or a commit
// the server ran but whose answer never arrived must count as lost, or a row
// would stand in the data source with no record of it.
func TestALostAnswerIsNeverTakenForARefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := postgresFixture(t)
	p := testkit.NewPGProxy(t, testkit.LoseFirstCommitAnswer)
	src, err := newRegistry(t).Source(ctx, integration(t, datasource.KindPostgres, p.Rewrite(f.dsn)))
	require.NoError(t, err)
	err = func() error {
		tx, err := src.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Write(ctx, insert(map[string]any{"id": int64(40), "name": "lost", "qty": int64(1)})); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}()
	require.Error(t, err)
	require.Equal(t, 1, p.Failed(), "the proxy cut the commit's answer: %v", err)
	require.Eventually(t, func() bool { return f.count(t, "inventory", "id = 40") == 1 }, 5*time.Second, 50*time.Millisecond,
		"the server ran the commit")
	require.True(t, datasource.AnswerLost(err), "a lost answer taken for a refusal: %v (%T)", err, err)
	require.False(t, datasource.CommitRefused(err))
}
