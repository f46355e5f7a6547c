package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// TestAnUploadedScanIsOCRdByTheWorker: a PDF whose second page is a scan
// (an image of text, no text layer), uploaded to a task, is OCR'd by the
// worker's ocr_file job, relayed from the outbox row its upload wrote;
// afterwards file_preview's text of page 2 holds its words and says OCR,
// and an extraction of the file sends the model the scan's words and says
// which pages were OCR'd (page 2 only). Before, nothing OCR'd at upload
// and extraction sent the PDF alone, whose scanned page has no text.
func TestAnUploadedScanIsOCRdByTheWorker(t *testing.T) {
	uploadedScanIsOCRd(t, testkit.Schema(t), testkit.Redis(t))
}

// TestAnUploadedScanIsOCRdByTheWorkerInDevMode is the same on dev mode's
// engines: SQLite and the in-process Redis (miniredis).
func TestAnUploadedScanIsOCRdByTheWorkerInDevMode(t *testing.T) {
	_, client := devRedis(t)
	uploadedScanIsOCRd(t, testkit.SQLite(t), testkit.RedisOn(client))
}

// chatModel stands in for the extraction model: it keeps each request's
// body and answers {"total": 1}.
type chatModel struct {
	mu     sync.Mutex
	bodies []string
}

func (m *chatModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": `{"total": 1}`}}},
	})
}

func needOCRTools(t *testing.T) {
	t.Helper()
	for _, prog := range []string{"pdftoppm", "tesseract", "bwrap"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed: run scripts/services.sh", prog)
		}
	}
}

func uploadedScanIsOCRd(t *testing.T, st *store.Store, rd testkit.RedisEnv) {
	needOCRTools(t)
	ctx := context.Background()
	model := &chatModel{}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.Tools.ExtractionBaseURL = srv.URL + "/v1"
	cfg.SweepInterval = time.Second
	p := newPlatformWith(t, cfg, st, rd)
	db := p.Store.DB
	tn := testkit.NewTenant(t, db)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, db.Create(&task).Error)

	scan := documenttest.TextThenScannedPDF("Cover letter from ACME", "INVOICE NUMBER 4711", "TOTAL DUE 1234.50 EUR")
	f, err := p.Files.Upload(ctx, task.ID, "letter.pdf", "", bytes.NewReader(scan))
	require.NoError(t, err)
	require.Equal(t, 2, f.Pages)
	var row models.Outbox
	require.NoError(t, db.Where("kind = ?", outbox.KindOCR).Take(&row).Error, "the upload owes an OCR pass")

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.New(p.WorkerServices()).Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	require.Eventually(t, func() bool {
		var r models.Outbox
		return db.Where("id = ?", row.ID).Take(&r).Error == nil && r.DoneAt != nil
	}, 2*time.Minute, 200*time.Millisecond, "the worker ran the OCR pass")

	res, err := p.Capabilities.OCRFile(ctx, f)
	require.NoError(t, err)
	require.Equal(t, capability.OCRResult{Pages: 2, OCRPages: []int{2}}, res, "only the scanned page was OCR'd")
	// Read from what the pass kept: the OCR tools are not needed again.
	start := time.Now()
	page := 2
	pv, err := p.Capabilities.FilePreview(ctx, task.ID, capability.PreviewParams{FileID: f.ID, Page: &page})
	require.NoError(t, err)
	require.True(t, pv.OCR)
	require.Contains(t, pv.Text, "INVOICE NUMBER 4711")
	require.NotEmpty(t, pv.Words)
	require.Less(t, time.Since(start), 2*time.Second, "page 2 was OCR'd already")
	page = 1
	pv, err = p.Capabilities.FilePreview(ctx, task.ID, capability.PreviewParams{FileID: f.ID, Page: &page})
	require.NoError(t, err)
	require.False(t, pv.OCR)
	require.Contains(t, pv.Text, "Cover letter from ACME")

	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, DisplayName: "Reader",
		BaseTool: models.BaseExtraction, Config: models.MustJSON(map[string]any{
			"instructions": "Read the total.", "output_schema": map[string]any{"type": "object", "properties": map[string]any{"total": map[string]any{"type": "number"}}},
		})}
	require.NoError(t, db.Create(&tool).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, db.Create(&step).Error)
	url, _ := p.Files.URL(f)
	out, err := p.ToolRuns.Run(ctx, models.NewID(), jobs.RunTool{
		TaskID: task.ID, StepID: step.ID, AgentID: tn.Agent.ID, WorkspaceID: tn.Workspace.ID,
		ConfiguredToolID: tool.ID, BaseTool: models.BaseExtraction, Op: "read",
		Input: json.RawMessage(`{"file_url":` + mustQuote(url) + `}`),
	})
	require.NoError(t, err)
	var reply struct {
		Status string `json:"status"`
		Output struct {
			Pages    int   `json:"pages"`
			OCRPages []int `json:"ocr_pages"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal(out, &reply), "%s", out)
	require.Equal(t, "ok", reply.Status, "%s", out)
	require.Equal(t, 2, reply.Output.Pages)
	require.Equal(t, []int{2}, reply.Output.OCRPages, "the result says which pages were OCR'd")
	model.mu.Lock()
	defer model.mu.Unlock()
	require.Len(t, model.bodies, 1)
	require.Contains(t, model.bodies[0], "INVOICE NUMBER 4711", "the model is sent the scan's words")
	require.Contains(t, model.bodies[0], "--- Page 2 ---")
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAnOCRPassPastItsWorkspacesShareWaitsItsTurn: an upload's OCR job
// whose workspace runs its share of passes goes back to the queue's retry
// set at once, without spending a try (asynq's retry count stays 0: the
// worker's IsFailure), and runs once the share frees. On Postgres and
// Redis, and on dev mode's SQLite and in-process Redis.
func TestAnOCRPassPastItsWorkspacesShareWaitsItsTurn(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		ocrPassWaitsItsTurn(t, testkit.Schema(t), testkit.Redis(t))
	})
	t.Run("dev", func(t *testing.T) {
		t.Parallel()
		_, client := devRedis(t)
		ocrPassWaitsItsTurn(t, testkit.SQLite(t), testkit.RedisOn(client))
	})
}

func ocrPassWaitsItsTurn(t *testing.T, st *store.Store, rd testkit.RedisEnv) {
	ctx := context.Background()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.Tools.DocumentRenderShare = 1
	p := newPlatformWith(t, cfg, st, rd)
	db := p.Store.DB
	tn := testkit.NewTenant(t, db)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, db.Create(&task).Error)
	held, err := limit.NewSemaphore(rd.Client, rd.Prefix, "ocr_pass", 1, time.Minute).Acquire(ctx, tn.Workspace.ID)
	require.NoError(t, err)
	_, err = p.Files.Upload(ctx, task.ID, "two.pdf", "", bytes.NewReader(documenttest.PDF("one", "two")))
	require.NoError(t, err)
	var row models.Outbox
	require.NoError(t, db.Where("kind = ?", outbox.KindOCR).Take(&row).Error)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.New(p.WorkerServices()).Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	insp := asynq.NewInspectorFromRedisClient(rd.Client)
	var waiting *asynq.TaskInfo
	require.Eventually(t, func() bool {
		waiting, _ = insp.GetTaskInfo(rd.Queues.Extract, row.ID)
		return waiting != nil && waiting.State == asynq.TaskStateRetry
	}, 30*time.Second, 50*time.Millisecond, "the pass went back to wait its turn")
	require.Zero(t, waiting.Retried, "waiting its turn is not a try")
	require.Contains(t, waiting.LastErr, "waits its turn")
	var r models.Outbox
	require.NoError(t, db.Where("id = ?", row.ID).Take(&r).Error)
	require.Nil(t, r.DoneAt, "the pass is still owed")

	held()
	require.NoError(t, insp.RunTask(rd.Queues.Extract, row.ID))
	require.Eventually(t, func() bool {
		return db.Where("id = ?", row.ID).Take(&r).Error == nil && r.DoneAt != nil
	}, 30*time.Second, 50*time.Millisecond, "the pass ran once the share freed")
}
