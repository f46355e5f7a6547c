package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestPruneDeletesOnlyRowsDoneBeforeTheCutoff(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		old, recent := now.Add(-10*24*time.Hour), now.Add(-time.Hour)
		rows := map[string]*time.Time{ // id → sent_at (and done_at, but for sent-not-done)
			"sent-long-ago": &old, "sent-recently": &recent, "never-sent": nil, "sent-not-done": &old,
		}
		ids := map[string]string{}
		for label, sentAt := range rows {
			row := models.Outbox{ID: models.NewID(), Kind: outbox.KindResumeEvent, Payload: models.MustJSON(map[string]string{}),
				CreatedAt: old, SentAt: sentAt, DoneAt: sentAt}
			if label == "sent-not-done" {
				row.DoneAt = nil // still owed: its job may have been lost
			}
			require.NoError(t, st.DB.Create(&row).Error)
			ids[label] = row.ID
		}

		n, err := outbox.Prune(ctx, st.DB, now.Add(-7*24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		var left []string
		require.NoError(t, st.DB.Model(&models.Outbox{}).Order("id").Pluck("id", &left).Error)
		require.ElementsMatch(t, []string{ids["sent-recently"], ids["never-sent"], ids["sent-not-done"]}, left,
			"a recently done row, and an unsent or undone one however old, are kept")
	})
}
