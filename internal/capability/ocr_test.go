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

	var task models.Task
	require.NoError(t, st.DB.Take(&task, "id = ?", f.task).Error)
	quiet := testkit.NewTenant(t, st.DB)
	quietTask := models.Task{ID: models.NewID(), WorkspaceID: quiet.Workspace.ID, AgentID: quiet.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, st.DB.Create(&quietTask).Error)
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
