package review_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/models"
)

func TestLockSessionAwaitRefusesASettledAwait(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	ctx := context.Background()
	cases := []struct {
		status  string // "" for a step that never parked
		refused bool
	}{
		{"", false},
		{models.AwaitPending, false},
		{models.AwaitResolved, true},
		{models.AwaitAborted, true},
	}
	for _, c := range cases {
		step, aw := p.addAwait(t)
		if c.status == "" {
			require.NoError(t, p.st.DB.Delete(&aw).Error)
		} else {
			require.NoError(t, p.st.DB.Model(&aw).Update("status", c.status).Error)
		}
		claims := session.Claims{TaskID: p.task.ID, StepID: step.ID}
		err := p.st.Tx(ctx, func(tx *gorm.DB) error { return review.LockSessionAwait(ctx, tx, claims) })
		if c.refused {
			require.Equal(t, apperr.Conflict, apperr.CodeOf(err), "await %q: %v", c.status, err)
		} else {
			require.NoError(t, err, "await %q", c.status)
		}
	}
}

func TestLockSessionAwaitHoldsOffASecondApprovalUntilTheFirstCommits(t *testing.T) {
	t.Parallel()
	p := newParkedCommitted(t)
	ctx := context.Background()
	claims := session.Claims{TaskID: p.task.ID, AgentID: p.tn.Agent.ID, WorkspaceID: p.tn.Workspace.ID, StepID: p.step.ID}

	locked, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- p.st.Tx(ctx, func(tx *gorm.DB) error {
			if err := review.LockSessionAwait(ctx, tx, claims); err != nil {
				return err
			}
			close(locked)
			<-release // the data-source transaction of the first approval
			_, _, err := review.ResolveSessionAwait(ctx, tx, claims, "user:first", "approve")
			return err
		})
	}()
	<-locked
	second := make(chan error, 1)
	go func() {
		second <- p.st.Tx(ctx, func(tx *gorm.DB) error { return review.LockSessionAwait(ctx, tx, claims) })
	}()
	select {
	case err := <-second:
		t.Fatalf("the second approval went ahead while the first held the await: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-first)
	require.Equal(t, apperr.Conflict, apperr.CodeOf(<-second), "the second finds the await settled")
}
