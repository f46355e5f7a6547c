package task_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

const bundleBase = "https://bundles.example.test/b"

// fixture is a tenant with a bundle, a binding and configured tools of its agent.
type fixture struct {
	st       *store.Store
	tenant   testkit.Tenant
	caller   task.Caller
	bundle   models.Bundle
	binding  models.Binding
	plain    models.ConfiguredTool // app tool without await_review
	awaiting models.ConfiguredTool // app tool with await_review
	python   models.ConfiguredTool
	svc      *task.Service
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func newFixture(t *testing.T, client *llm.Client) fixture {
	t.Helper()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	f := fixture{st: st, tenant: tn, caller: task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "token:test"}}
	f.bundle = models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: tn.Workspace.ID, Name: "review",
		SHA256: "ab12", ContentType: "text/html; charset=utf-8", Size: 4, StorageKey: "k1"}
	require.NoError(t, st.DB.Create(&f.bundle).Error)
	v2 := f.bundle
	v2.Version, v2.SHA256, v2.StorageKey = 2, "cd34", "k2"
	require.NoError(t, st.DB.Create(&v2).Error)
	f.binding = models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b", BindingKind: "rest",
		AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, st.DB.Create(&f.binding).Error)
	schema := models.JSON(`{"type":"object","properties":{"report_id":{"type":"integer"}},"required":["report_id"],"additionalProperties":false}`)
	pinned := 1
	f.plain = models.ConfiguredTool{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, DisplayName: "Plain",
		BaseTool: models.BaseAppTool, BundleID: &f.bundle.ID, BindingID: &f.binding.ID, InputSchema: schema}
	f.awaiting = models.ConfiguredTool{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, DisplayName: "Review",
		BaseTool: models.BaseAppTool, BundleID: &f.bundle.ID, BundleVersion: &pinned, BindingID: &f.binding.ID, AwaitReview: true}
	f.python = models.ConfiguredTool{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, DisplayName: "Py",
		BaseTool: models.BasePythonCode, Config: models.JSON(`{"code":"print(1)"}`)}
	for _, ct := range []*models.ConfiguredTool{&f.plain, &f.awaiting, &f.python} {
		require.NoError(t, st.DB.Create(ct).Error)
	}
	f.svc = task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase, LLM: client})
	return f
}

func (f fixture) newTask(t *testing.T) task.View {
	t.Helper()
	v, err := f.svc.Create(context.Background(), f.caller, task.TaskInput{Title: "Review ACME"})
	require.NoError(t, err)
	return v
}

func (f fixture) setKeyDetails(t *testing.T, defs, instructions string) {
	t.Helper()
	require.NoError(t, f.st.DB.Model(&models.Agent{}).Where("id = ?", f.tenant.Agent.ID).
		Updates(map[string]any{"key_definitions": models.JSON(defs), "summary_instructions": instructions}).Error)
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func TestCreateAndGetTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	prio := 7.5
	created, err := f.svc.Create(ctx, f.caller, task.TaskInput{Title: "  Invoice 42 ", Priority: &prio})
	require.NoError(t, err)
	require.Equal(t, models.TaskRunning, created.Status)
	require.Equal(t, "Invoice 42", created.Title)
	require.Equal(t, 7.5, created.Priority)

	got, err := f.svc.Get(ctx, f.caller, created.ID)
	require.NoError(t, err)
	require.Equal(t, created.ID, got.ID)
	require.Empty(t, got.Steps)

	other := testkit.NewTenant(t, f.st.DB)
	_, err = f.svc.Get(ctx, task.Caller{WorkspaceID: other.Workspace.ID, AgentID: other.Agent.ID}, created.ID)
	require.True(t, apperr.Is(err, apperr.NotFound), "another agent's task: %v", err)
	_, err = f.svc.Get(ctx, f.caller, "not-a-uuid")
	require.True(t, apperr.Is(err, apperr.NotFound))
}

func TestAppToolStepWithoutAwait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	f.setKeyDetails(t, `[{"key":"vendor"}]`, "Summarise.")
	tk := f.newTask(t)

	st, err := f.svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":59137}`)})
	require.NoError(t, err)
	require.Equal(t, models.StepCompleted, st.Status)
	require.Equal(t, models.StepAppTool, st.Kind)

	art := decode[map[string]any](t, st.Output)
	require.Equal(t, f.plain.ID, art["configured_tool_id"])
	require.Equal(t, f.bundle.ID, art["bundle_id"])
	require.EqualValues(t, 2, art["bundle_version"], "unpinned: the newest version")
	require.Equal(t, "cd34", art["bundle_sha"])
	require.Equal(t, bundleBase+"/"+f.bundle.ID+"/2", art["bundle_url"])
	require.Equal(t, f.binding.ID, art["binding_id"])
	require.Equal(t, map[string]any{"report_id": float64(59137)}, art["params"])
	require.NotContains(t, art, "await_id")

	in := decode[map[string]any](t, st.Input)
	require.Equal(t, f.plain.ID, in["configured_tool_id"], "injected from the tool")
	require.Equal(t, "Summarise.", in["summary_instructions"], "injected from the agent row")
	require.Equal(t, []any{map[string]any{"key": "vendor"}}, in["key_definitions"])

	var tr models.Task
	require.NoError(t, f.st.DB.Where("id = ?", tk.ID).Take(&tr).Error)
	require.Equal(t, models.TaskRunning, tr.Status)
	var awaits, summaries, feed int64
	f.st.DB.Model(&models.TaskAwait{}).Where("task_id = ?", tk.ID).Count(&awaits)
	f.st.DB.Model(&models.Outbox{}).Where("kind = ? AND payload->>'task_id' = ?", outbox.KindSummary, tk.ID).Count(&summaries)
	f.st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", tk.ID, models.FeedArtifact).Count(&feed)
	require.Zero(t, awaits)
	require.Zero(t, summaries, "no pause, no summary pass")
	require.EqualValues(t, 1, feed)

	// A second step on the still-running task is fine.
	_, err = f.svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":1}`)})
	require.NoError(t, err)
	got, err := f.svc.Get(ctx, f.caller, tk.ID)
	require.NoError(t, err)
	require.Len(t, got.Steps, 2)
}

func TestAppToolStepWithAwait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, defs, instructions string
		wantSummary              bool
	}{
		{"key definitions", `[{"key":"vendor"}]`, "", true},
		{"summary template", ``, "One sentence.", true},
		{"neither", ``, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			ctx := context.Background()
			if tc.defs != "" || tc.instructions != "" {
				defs := tc.defs
				if defs == "" {
					defs = "null"
				}
				f.setKeyDetails(t, defs, tc.instructions)
			}
			tk := f.newTask(t)
			st, err := f.svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: f.awaiting.ID})
			require.NoError(t, err)
			art := decode[task.Artifact](t, st.Output)
			require.NotEmpty(t, art.AwaitID)
			require.Equal(t, 1, art.BundleVersion, "pinned version")
			require.JSONEq(t, `{}`, string(art.Params), "absent params are {}")

			var aw models.TaskAwait
			require.NoError(t, f.st.DB.Where("id = ?", art.AwaitID).Take(&aw).Error)
			require.Equal(t, tk.ID, aw.TaskID)
			require.Equal(t, models.AwaitSourceAppTool, aw.SourceType)
			require.Equal(t, st.ID, aw.CorrelationKey)
			require.Equal(t, models.AwaitPending, aw.Status)

			var tr models.Task
			require.NoError(t, f.st.DB.Where("id = ?", tk.ID).Take(&tr).Error)
			require.Equal(t, models.TaskWaitingForInput, tr.Status)

			var rows []models.Outbox
			require.NoError(t, f.st.DB.Where("kind = ? AND payload->>'task_id' = ?", outbox.KindSummary, tk.ID).Find(&rows).Error)
			if !tc.wantSummary {
				require.Empty(t, rows, "an agent with neither pays no LLM call")
				return
			}
			require.Len(t, rows, 1)
			p := decode[task.SummaryPayload](t, json.RawMessage(rows[0].Payload))
			require.Equal(t, task.SummaryPayload{WorkspaceID: f.tenant.Workspace.ID, TaskID: tk.ID, StepID: st.ID,
				AgentID: f.tenant.Agent.ID, AwaitID: art.AwaitID}, p)

			// The parked task takes no further step.
			_, err = f.svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":1}`)})
			require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
		})
	}
}

func TestAppToolStepRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	tk := f.newTask(t)
	other := testkit.NewTenant(t, f.st.DB)
	foreign := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: other.Workspace.ID, AgentID: other.Agent.ID,
		DisplayName: "Foreign", BaseTool: models.BaseAppTool, BundleID: &f.bundle.ID, BindingID: &f.binding.ID}
	require.NoError(t, f.st.DB.Create(&foreign).Error)
	done := f.newTask(t)
	require.NoError(t, f.st.DB.Model(&models.Task{}).Where("id = ?", done.ID).Update("status", models.TaskCompleted).Error)
	failed := f.newTask(t)
	require.NoError(t, f.st.DB.Model(&models.Task{}).Where("id = ?", failed.ID).Update("status", models.TaskFailed).Error)

	for _, tc := range []struct {
		name   string
		taskID string
		in     task.StepInput
		code   apperr.Code
		msg    string
	}{
		{"missing configured_tool_id", tk.ID, task.StepInput{Params: json.RawMessage(`{"report_id":1}`)}, apperr.Invalid, "configured_tool_id is required"},
		{"display name instead of id", tk.ID, task.StepInput{ConfiguredToolID: "Plain"}, apperr.Invalid, "configured_tool_id must be a UUID"},
		{"unknown configured tool", tk.ID, task.StepInput{ConfiguredToolID: models.NewID()}, apperr.NotFound, "configured tool not found"},
		{"another agent's tool", tk.ID, task.StepInput{ConfiguredToolID: foreign.ID}, apperr.NotFound, "configured tool not found"},
		{"not an app tool", tk.ID, task.StepInput{ConfiguredToolID: f.python.ID}, apperr.NotFound, "is a python_code_tool, not an app_tool"},
		{"params not an object", tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`[1]`)}, apperr.Invalid, "params must be a JSON object"},
		{"params fail the schema", tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":"x"}`)}, apperr.Invalid, "params do not match the input schema: at '/report_id': got string, want integer"},
		{"params miss a required key", tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{}`)}, apperr.Invalid, "missing property 'report_id'"},
		{"injected configured_tool_id", tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":1,"configured_tool_id":"x"}`)}, apperr.Invalid, "params may not contain configured_tool_id"},
		{"injected key_definitions", tk.ID, task.StepInput{ConfiguredToolID: f.awaiting.ID, Params: json.RawMessage(`{"key_definitions":[]}`)}, apperr.Invalid, "params may not contain key_definitions"},
		{"injected summary_instructions", tk.ID, task.StepInput{ConfiguredToolID: f.awaiting.ID, Params: json.RawMessage(`{"summary_instructions":"x"}`)}, apperr.Invalid, "params may not contain summary_instructions"},
		{"completed task", done.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":1}`)}, apperr.Conflict, "task is completed"},
		{"failed task", failed.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":1}`)}, apperr.Conflict, "task is failed"},
		{"unknown task", models.NewID(), task.StepInput{ConfiguredToolID: f.plain.ID}, apperr.NotFound, "task not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.AddAppToolStep(ctx, f.caller, tc.taskID, tc.in)
			require.Error(t, err)
			require.Equal(t, tc.code, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tc.msg)
		})
	}
	var steps int64
	require.NoError(t, f.st.DB.Model(&models.Step{}).Where("task_id IN ?", []string{tk.ID, done.ID, failed.ID}).Count(&steps).Error)
	require.Zero(t, steps, "no refusal left a step behind")
}

func TestConcurrentAwaitStepsParkOnce(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	tn := testkit.NewTenant(t, st.DB)
	b := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: tn.Workspace.ID, Name: "r", SHA256: "ab", ContentType: "text/html", Size: 1, StorageKey: "k"}
	require.NoError(t, st.DB.Create(&b).Error)
	bd := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b", BindingKind: "rest", AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, st.DB.Create(&bd).Error)
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, DisplayName: "Review",
		BaseTool: models.BaseAppTool, BundleID: &b.ID, BindingID: &bd.ID, AwaitReview: true}
	require.NoError(t, st.DB.Create(&tool).Error)
	svc := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
	caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "token:test"}
	tk, err := svc.Create(context.Background(), caller, task.TaskInput{Title: "race"})
	require.NoError(t, err)

	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := svc.AddAppToolStep(context.Background(), caller, tk.ID, task.StepInput{ConfiguredToolID: tool.ID})
			errs <- err
		}()
	}
	var ok, conflicts int
	for range n {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case apperr.Is(err, apperr.Conflict):
			conflicts++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	require.Equal(t, 1, ok)
	require.Equal(t, n-1, conflicts)
	var awaits, steps int64
	st.DB.Model(&models.TaskAwait{}).Where("task_id = ?", tk.ID).Count(&awaits)
	st.DB.Model(&models.Step{}).Where("task_id = ?", tk.ID).Count(&steps)
	require.EqualValues(t, 1, awaits)
	require.EqualValues(t, 1, steps)
}

// TestStepThatQueuesNudgesTheRelay: a step whose transaction queued an
// outbox row (its producer's job) calls AfterQueueFunc once, after commit;
// a step that queued nothing does not.
func TestStepThatQueuesNudgesTheRelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	var nudges []int64 // outbox rows committed at each nudge
	svc := task.NewService(task.Options{Store: f.st, Log: discard, BundleBaseURL: bundleBase, AfterQueueFunc: func(context.Context) {
		var n int64
		require.NoError(t, f.st.DB.Model(&models.Outbox{}).Count(&n).Error)
		nudges = append(nudges, n)
	}})
	tk := f.newTask(t)
	_, err := svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: f.plain.ID, Params: json.RawMessage(`{"report_id":1}`)})
	require.NoError(t, err)
	require.Empty(t, nudges, "nothing queued, no nudge")

	produced := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID, DisplayName: "Seeded",
		BaseTool: models.BaseAppTool, BundleID: &f.bundle.ID, BindingID: &f.binding.ID, ProducerToolID: &f.python.ID}
	require.NoError(t, f.st.DB.Create(&produced).Error)
	st, err := svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: produced.ID})
	require.NoError(t, err)
	require.Equal(t, models.StepRunning, st.Status)
	require.Equal(t, []int64{1}, nudges, "one nudge, once the producer's job is committed")
}
