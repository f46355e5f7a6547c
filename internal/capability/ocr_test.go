package capability_test

import (
	"context"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestAnOCRPassHoldsItsWorkspacesShareAndRecordsHostilePages: while one
// workspace holds its share of the page readers, its upload's OCR pass
// fails with a retryable 503 (the job is retried, nothing kept) and
// another workspace's pass runs at once; a page a budget refuses (a PDF
// bomb) is recorded as refused and costs the pass nothing more; once the
// share frees the pass finishes and is kept, so asking again reads nothing.
func TestAnOCRPassHoldsItsWorkspacesShareAndRecordsHostilePages(t *testing.T) {
	t.Parallel()
	for _, prog := range []string{"pdftoppm", "tesseract"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed: run scripts/services.sh", prog)
		}
	}
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	blobs := f.blobs
	gate := limit.NewWorkGate(limit.WorkGateOptions{What: "page renderings", Redis: rd.Client, KeyPrefix: rd.Prefix,
		Process: 2, Share: 1, Wait: 200 * time.Millisecond})
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix, Blobs: blobs, Gate: gate})
	ctx := context.Background()

	task, quietTask := twoWorkspaces(t, f)
	flood := f.upload(t, f.task, "flood.png", documenttest.ScanPNG("FLOOD 1"))
	mine := f.upload(t, quietTask.ID, "mine.png", documenttest.ScanPNG("QUIET 2024"))
	bomb := f.upload(t, f.task, "bomb.pdf", documenttest.PDFBomb(20<<20, 1)) // past a page's budget, within a document's

	held, err := gate.Acquire(ctx, task.WorkspaceID, time.Minute)
	require.NoError(t, err)
	_, err = caps.OCRFile(ctx, flood)
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
	require.ErrorIs(t, err, limit.ErrSlotsTaken)
	res, text, err := caps.OCRText(ctx, mine)
	require.NoError(t, err, "the other workspace's pass runs while the first holds its share")
	require.Equal(t, []int{1}, res.OCRPages)
	require.Len(t, text, 1)
	require.Contains(t, text[0].Text, "QUIET 2024")

	start := time.Now()
	res, err = caps.OCRFile(ctx, bomb)
	require.NoError(t, err)
	require.Empty(t, res.OCRPages)
	require.Contains(t, res.Refused[1], "decoded streams")
	t.Logf("a bomb's pass: %s", time.Since(start))

	held()
	res, err = caps.OCRFile(ctx, flood)
	require.NoError(t, err)
	require.Equal(t, capability.OCRResult{Pages: 1, OCRPages: []int{1}}, res)
	require.NoError(t, blobs.Delete(ctx, flood.StorageKey))
	res, text, err = caps.OCRText(ctx, flood)
	require.NoError(t, err, "kept: the file is not read again")
	require.Equal(t, []int{1}, res.OCRPages)
	require.Contains(t, text[0].Text, "FLOOD")
}

// twoWorkspaces returns the fixture's task and a task of another
// workspace.
func twoWorkspaces(t *testing.T, f *fixture) (mine, other models.Task) {
	t.Helper()
	require.NoError(t, f.st.DB.Take(&mine, "id = ?", f.task).Error)
	tn := testkit.NewTenant(t, f.st.DB)
	other = models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, f.st.DB.Create(&other).Error)
	return mine, other
}

// countingStore counts the reads of one key.
type countingStore struct {
	storage.Store
	key   string
	reads atomic.Int32
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	if key == c.key {
		c.reads.Add(1)
	}
	return c.Store.Get(ctx, key)
}

// TestAnOCRPassReadsTheFileOnce: a pass over a document's pages reads its
// bytes from the blob store once, not once a page (a 40-page upload on an
// object store was 40 downloads).
func TestAnOCRPassReadsTheFileOnce(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	blobs := &countingStore{Store: f.blobs}
	f.serveFrom(t, blobs)
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix, Blobs: blobs})

	doc := f.upload(t, f.task, "four.pdf", documenttest.PDF("one", "two", "three", "four"))
	require.Equal(t, 4, doc.Pages)
	blobs.key = doc.StorageKey
	res, err := caps.OCRFile(context.Background(), doc)
	require.NoError(t, err)
	require.Equal(t, capability.OCRResult{Pages: 4, OCRPages: []int{}}, res, "text layers: nothing to OCR")
	require.EqualValues(t, 1, blobs.reads.Load())
}

// TestAQueuedOCRPassWaitsItsTurnPastItsWorkspacesShare: while a workspace
// runs its share of OCR passes from the queue, its next pass answers
// ErrOCRPassWaits at once (its job waits its turn without holding a
// worker), and another workspace's pass runs; on its job's last try the
// pass runs anyway; a pass that ran frees its slot.
func TestAQueuedOCRPassWaitsItsTurnPastItsWorkspacesShare(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	passes := limit.NewSemaphore(rd.Client, rd.Prefix, "ocr_pass", 1, time.Minute)
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix, Blobs: f.blobs, OCRPasses: passes})
	ctx := context.Background()

	task, quietTask := twoWorkspaces(t, f)
	owed := func(file models.File) string {
		var row models.Outbox
		require.NoError(t, st.DB.Where("kind = ? AND payload::text LIKE ?", "ocr_file", "%"+file.ID+"%").Take(&row).Error)
		return row.ID
	}
	flood := owed(f.upload(t, f.task, "flood.pdf", documenttest.PDF("one", "two")))
	mine := owed(f.upload(t, quietTask.ID, "mine.pdf", documenttest.PDF("quiet")))

	held, err := passes.Acquire(ctx, task.WorkspaceID)
	require.NoError(t, err)
	start := time.Now()
	err = caps.OCROutbox(ctx, flood, true)
	require.ErrorIs(t, err, capability.ErrOCRPassWaits)
	require.Less(t, time.Since(start), time.Second, "it waits for nothing")
	t.Logf("a pass that waits its turn answered in %s", time.Since(start))
	require.NoError(t, caps.OCROutbox(ctx, mine, true), "another workspace's pass runs")
	require.NoError(t, caps.OCROutbox(ctx, flood, false), "on its last try the pass runs anyway")

	held()
	again := owed(f.upload(t, f.task, "again.pdf", documenttest.PDF("three")))
	require.NoError(t, caps.OCROutbox(ctx, again, true))
	require.Zero(t, rd.Client.ZCard(ctx, rd.Prefix+"sem:ocr_pass:"+task.WorkspaceID).Val(), "a pass that ran freed its slot")
}
