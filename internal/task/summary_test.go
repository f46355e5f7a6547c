package task_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// chatServer is a stand-in for an OpenAI-compatible provider: it answers
// POST /v1/chat/completions with status and, on 200, content as the first
// choice's message, and records the requests it received.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
}

func newChatServer(t *testing.T, status int, content string) *chatServer {
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		cs.mu.Lock()
		cs.requests = append(cs.requests, body)
		cs.auth = append(cs.auth, r.Header.Get("Authorization"))
		cs.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			_, _ = w.Write([]byte(`{"error":{"message":"the model is overloaded"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) calls() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.requests)
}

// parkedStep makes a task parked on an await_review artifact and returns the
// task, the step and the summary outbox row id.
func parkedStep(t *testing.T, f fixture) (task.View, task.StepView, string) {
	t.Helper()
	tk := f.newTask(t)
	st, err := f.svc.AddAppToolStep(context.Background(), f.caller, tk.ID, task.StepInput{
		ConfiguredToolID: f.awaiting.ID, Params: json.RawMessage(`{"invoice":"INV-7"}`)})
	require.NoError(t, err)
	var row models.Outbox
	require.NoError(t, f.st.DB.Where("kind = ? AND payload->>'step_id' = ?", outbox.KindSummary, st.ID).Take(&row).Error)
	return tk, st, row.ID
}

func TestSummaryPassFillsKeyDetails(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, http.StatusOK, `{"vendor":"ACME Corp","total_amount":1250.5,"summary":"ACME invoice for review.","extra":"ignored"}`)
	f := newFixture(t, llm.New(cs.URL+"/v1", "sk-test", "gpt-test"))
	f.setKeyDetails(t, `[{"key":"vendor","description":"The vendor"},{"key":"total_amount","type":"number"}]`, "One sentence.")
	tk, st, outboxID := parkedStep(t, f)
	ctx := context.Background()

	require.NoError(t, f.svc.Summarize(ctx, outboxID))

	var kvs []models.AgentKeyValue
	require.NoError(t, f.st.DB.Where("task_id = ?", tk.ID).Order("key").Find(&kvs).Error)
	got := map[string]string{}
	for _, kv := range kvs {
		require.Equal(t, f.tenant.Agent.ID, kv.AgentID)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, kv.Value))
		got[kv.Key] = compact.String()
	}
	require.Equal(t, map[string]string{"vendor": `"ACME Corp"`, "total_amount": `1250.5`, "summary": `"ACME invoice for review."`}, got)

	view, err := f.svc.Get(ctx, f.caller, tk.ID)
	require.NoError(t, err)
	require.Len(t, view.Steps, 1)
	art := decode[task.Artifact](t, view.Steps[0].Output)
	require.JSONEq(t, `{"vendor":"ACME Corp","total_amount":1250.5,"summary":"ACME invoice for review."}`, string(art.ExtractedData))
	require.Equal(t, st.ID, art.StepID)
	require.NotEmpty(t, art.AwaitID, "the artifact is otherwise intact")
	require.Equal(t, models.TaskWaitingForInput, view.Status)
	require.JSONEq(t, `"ACME Corp"`, string(view.KeyValues["vendor"]))

	// The provider saw the chat-completions protocol.
	require.Equal(t, 1, cs.calls())
	req := cs.requests[0]
	require.Equal(t, "gpt-test", req["model"])
	require.Equal(t, map[string]any{"type": "json_object"}, req["response_format"])
	require.Equal(t, "Bearer sk-test", cs.auth[0])
	msgs := req["messages"].([]any)
	require.Len(t, msgs, 2)
	require.Contains(t, msgs[0].(map[string]any)["content"], "vendor (string): The vendor")
	require.Contains(t, msgs[0].(map[string]any)["content"], "One sentence.")
	require.Contains(t, msgs[1].(map[string]any)["content"], "INV-7")

	// A second run of the same job (a retried or duplicated job) changes
	// nothing and calls no LLM.
	require.NoError(t, f.svc.Summarize(ctx, outboxID))
	require.Equal(t, 1, cs.calls())
}

func TestSummaryPassFailureLeavesTheArtifactIntact(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, http.StatusInternalServerError, "")
	f := newFixture(t, nil)
	var logs bytes.Buffer
	f.svc = task.NewService(task.Options{Store: f.st, Log: slog.New(slog.NewTextHandler(&logs, nil)),
		BundleBaseURL: bundleBase, LLM: llm.New(cs.URL+"/v1", "", "gpt-test")})
	f.setKeyDetails(t, `[{"key":"vendor"}]`, "")
	tk, st, outboxID := parkedStep(t, f)

	require.NoError(t, f.svc.Summarize(context.Background(), outboxID), "a failure never fails the job")
	require.Equal(t, 1, cs.calls())
	require.Contains(t, logs.String(), "summary pass failed")
	require.Contains(t, logs.String(), "provider answered 500: the model is overloaded")

	var step models.Step
	require.NoError(t, f.st.DB.Where("id = ?", st.ID).Take(&step).Error)
	require.Equal(t, models.StepCompleted, step.Status)
	require.JSONEq(t, string(st.Output), string(step.Output), "artifact unchanged")
	var tr models.Task
	require.NoError(t, f.st.DB.Where("id = ?", tk.ID).Take(&tr).Error)
	require.Equal(t, models.TaskWaitingForInput, tr.Status, "still parked")
	var kvs int64
	f.st.DB.Model(&models.AgentKeyValue{}).Where("task_id = ?", tk.ID).Count(&kvs)
	require.Zero(t, kvs)
}

func TestSummaryPassSkippedWithoutLLM(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var logs bytes.Buffer
	f.svc = task.NewService(task.Options{Store: f.st, Log: slog.New(slog.NewTextHandler(&logs, nil)), BundleBaseURL: bundleBase})
	f.setKeyDetails(t, `[{"key":"vendor"}]`, "")
	tk, st, outboxID := parkedStep(t, f)

	require.NoError(t, f.svc.Summarize(context.Background(), outboxID))
	require.Contains(t, logs.String(), "level=INFO")
	require.Contains(t, logs.String(), "summary pass skipped")
	require.Contains(t, logs.String(), "no LLM is configured")

	var step models.Step
	require.NoError(t, f.st.DB.Where("id = ?", st.ID).Take(&step).Error)
	require.NotContains(t, string(step.Output), "extracted_data")
	var kvs int64
	f.st.DB.Model(&models.AgentKeyValue{}).Where("task_id = ?", tk.ID).Count(&kvs)
	require.Zero(t, kvs)
}

func TestSummaryPassUnknownOutboxRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var logs bytes.Buffer
	f.svc = task.NewService(task.Options{Store: f.st, Log: slog.New(slog.NewTextHandler(&logs, nil)), BundleBaseURL: bundleBase})
	require.NoError(t, f.svc.Summarize(context.Background(), models.NewID()))
	require.Contains(t, logs.String(), "summary pass failed")
}
