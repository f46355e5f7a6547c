package capability_test

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestAFloodingWorkspaceLeavesOthersTheirPages: while one workspace holds
// its share of page renderings (here taken through the gate itself, as its
// renderings in flight would), a flood of its pages waits and is refused
// with a retryable 503 past the wait, not cached, while another
// workspace's pages render at once; once its share frees, its pages render.
func TestAFloodingWorkspaceLeavesOthersTheirPages(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm is not installed: run scripts/services.sh")
	}
	st := testkit.Schema(t) // not one transaction: the flood's renderings read the files at once
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	wait := 300 * time.Millisecond
	gate := limit.NewWorkGate(limit.WorkGateOptions{What: "page renderings", Redis: rd.Client, KeyPrefix: rd.Prefix,
		Process: 2, Share: 1, Wait: wait})
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix, Gate: gate})
	ctx := context.Background()

	var task models.Task
	require.NoError(t, st.DB.Take(&task, "id = ?", f.task).Error)
	flooderWS := task.WorkspaceID
	quiet := testkit.NewTenant(t, st.DB)
	quietTask := models.Task{ID: models.NewID(), WorkspaceID: quiet.Workspace.ID, AgentID: quiet.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, st.DB.Create(&quietTask).Error)

	flood := f.upload(t, f.task, "flood.pdf", documenttest.PDF(pages(6)...))
	mine := f.upload(t, quietTask.ID, "mine.pdf", documenttest.PDF("the quiet workspace's page"))

	inFlight, err := gate.Acquire(ctx, flooderWS, time.Minute)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = caps.PageImage(ctx, f.task, flood.ID, i+1, document.SizeThumb)
		}()
	}
	require.Eventually(t, func() bool { return gate.Waiting() > 0 }, 5*time.Second, time.Millisecond)
	start := time.Now()
	img, err := caps.PageImage(ctx, quietTask.ID, mine.ID, 1, document.SizeThumb)
	require.NoError(t, err, "the quiet workspace's page renders while the other floods")
	require.NotEmpty(t, img)
	require.Less(t, time.Since(start), wait+document.MaxRenderWork/4)
	wg.Wait()
	for _, err := range errs {
		require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
		require.ErrorIs(t, err, limit.ErrSlotsTaken)
		require.GreaterOrEqual(t, apperr.RetryAfterSeconds(err), 1)
	}

	inFlight()
	for page := 1; page <= 2; page++ {
		_, err := caps.PageImage(ctx, f.task, flood.ID, page, document.SizeThumb)
		require.NoError(t, err, "a refusal of the gate is not kept: page %d renders once the share frees", page)
	}
	require.Zero(t, gate.InUse())
}
