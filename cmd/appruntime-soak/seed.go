package main

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/loadseed"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// csvRows is how many rows the lookup tool's CSV file holds.
const csvRows = 1000

// parkedTask is a task parked on an app-tool step with a pending await.
type parkedTask struct {
	taskID, stepID, awaitID string
	due                     time.Time // its expiry; zero: none (approved by the traffic)
}

// fixture is what seed made.
type fixture struct {
	workspaceID, agentID string
	hostToken            string
	agentToken           string
	writeStep            string // the step whose session writes and reads
	mintStep             string // the step the mint traffic mints on
	runSteps             []string
	pyRunSteps           []string // /run surfaces of the python tool
	approvals            []parkedTask
	expiries             []parkedTask
	toolCallTask         string // the running task the agent calls its echo tool on
	uploadTask           string // the running task the agent uploads files to
	review               reviewFixture
}

// reviewFixture is the second workspace, whose parked tasks two reviewers
// claim through POST /api/review/next and approve: a workspace of its own,
// so that the queue never hands them the first one's approvals and expiries.
type reviewFixture struct {
	workspaceID    string
	reviewerTokens []string // host tokens of two reviewers
	parked         []parkedTask
}

// Agent tools the soak's agent declares (seed 003), both url targets on the
// soak's tool endpoint: echo answers its input as text, ask answers a
// pending-input card whose button "ok" (no target) is the result.
const (
	echoTool = "soak_echo"
	askTool  = "soak_ask"
	askOK    = "ok"
)

// pythonCode is the python tool's script.
const pythonCode = "def main(input):\n    return {\"n\": int(input[\"n\"]) * 2}\n"

// seed creates one tenant: a data-source integration (tables invoices and
// decisions on the data sources' server), a binding with a read, a write,
// an approve action resolving the await, a CSV lookup tool and a python
// tool, an app tool parking its task, tasks for writes, mints, /run, agent
// tool calls and uploads, parked tasks for the approvals, parked tasks
// whose awaits expire during the run, and an agent whose resume webhook is
// the soak's receiver, with an agent token and two agent tools on the
// soak's tool endpoint (toolURL). Then the review workspace (seedReview)
// with reviews parked tasks.
func seed(ctx context.Context, dbURL, dataURL string, secretsKey []byte, hookURL, hookSecret, toolURL string,
	approvals, expiries, reviews, runSurfaces int, runFor time.Duration) (fixture, error) {
	data, err := store.Open(ctx, dataURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return fixture{}, err
	}
	defer data.Close()
	for _, q := range []string{
		`CREATE TABLE invoices (id integer PRIMARY KEY, vendor text NOT NULL, amount numeric(12,2) NOT NULL, status text NOT NULL)`,
		`CREATE TABLE decisions (id serial PRIMARY KEY, task_id text NOT NULL, decision text NOT NULL)`,
		`INSERT INTO invoices SELECT g, 'vendor ' || g, g, 'pending' FROM generate_series(1, 100) g`,
	} {
		if err := data.DB.WithContext(ctx).Exec(q).Error; err != nil {
			return fixture{}, err
		}
	}
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return fixture{}, err
	}
	defer st.Close()
	box, err := crypt.New(secretsKey)
	if err != nil {
		return fixture{}, err
	}
	ws := models.Workspace{ID: models.NewID(), Name: "soak"}
	user := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: "soak@example.test", Role: models.RoleAdmin, PasswordHash: "-"}
	sealedHook, err := box.Seal([]byte(hookSecret))
	if err != nil {
		return fixture{}, err
	}
	agent := models.Agent{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak", ResumeWebhookURL: hookURL, WebhookSecretEnc: sealedHook}
	sealed, err := box.SealJSON(datasource.Secrets{DSN: dataURL})
	if err != nil {
		return fixture{}, err
	}
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak data", Kind: datasource.KindPostgres, SecretsEnc: sealed}
	spec := bindingspec.Spec{
		Reads: []bindingspec.Read{{Op: "list_invoices", Table: "invoices", Columns: []string{"id", "vendor", "amount", "status"},
			Filterable: []string{"id"}, OrderBy: []bindingspec.Order{{Column: "id"}}, Limit: 5}},
		Writes: []bindingspec.Write{{Op: "record_decision", Table: "decisions", Mode: bindingspec.ModeInsert, Columns: []string{"decision"},
			FixedValues: map[string]any{"task_id": "{{task_id}}"}}},
		Actions: []bindingspec.Action{{Name: "approve", Writes: []string{"record_decision"}, FeedEvent: "invoice_approved", ResolvesAwait: true}},
		Tools: []bindingspec.Tool{{Op: "lookup", Tool: "soak lookup", Params: []string{"match_criteria", "return_columns"}},
			{Op: "double", Tool: "soak python", Params: []string{"n"}}},
	}
	b := models.Binding{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak", BindingKind: bindingspec.KindPostgres,
		IntegrationID: &integ.ID, AllowedOperations: models.MustJSON(spec), Version: 1}
	lookup := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "soak lookup",
		BaseTool: models.BaseCSVLookup, Config: models.MustJSON(map[string]any{"file_name": "soak.csv"})}
	python := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "soak python",
		BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": pythonCode})}
	bundle := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws.ID, Name: "soak", SHA256: "-", ContentType: "text/html", StorageKey: "-"}
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "soak review",
		BaseTool: models.BaseAppTool, BundleID: &bundle.ID, BindingID: &b.ID, AwaitReview: true}
	for _, row := range []any{&ws, &user, &agent, &integ, &b, &lookup, &python, &bundle, &tool} {
		if err := st.DB.WithContext(ctx).Create(row).Error; err != nil {
			return fixture{}, fmt.Errorf("seed %T: %w", row, err)
		}
	}
	fx := fixture{workspaceID: ws.ID, agentID: agent.ID}
	running := func() (string, string, error) {
		task := models.Task{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, Status: models.TaskRunning}
		step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID, Status: models.StepCompleted}
		return task.ID, step.ID, st.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&task).Error; err != nil {
				return err
			}
			return tx.Create(&step).Error
		})
	}
	var writeTask string
	if writeTask, fx.writeStep, err = running(); err != nil {
		return fixture{}, err
	}
	if _, fx.mintStep, err = running(); err != nil {
		return fixture{}, err
	}
	if fx.toolCallTask, _, err = running(); err != nil {
		return fixture{}, err
	}
	if fx.uploadTask, _, err = running(); err != nil {
		return fixture{}, err
	}
	// A task keeps at most two live sessions: each /run surface has a task.
	for i := range runSurfaces + 1 {
		_, s, err := running()
		if err != nil {
			return fixture{}, err
		}
		if i == runSurfaces { // one surface runs the python tool
			fx.pyRunSteps = append(fx.pyRunSteps, s)
		} else {
			fx.runSteps = append(fx.runSteps, s)
		}
	}
	if err := loadseed.UploadCSV(ctx, st, secretsKey, writeTask, "soak.csv", csvRows); err != nil {
		return fixture{}, err
	}
	park := func(due time.Time) (parkedTask, error) { return parkTask(ctx, st, ws.ID, agent.ID, tool.ID, due) }
	for range approvals {
		p, err := park(time.Time{})
		if err != nil {
			return fixture{}, err
		}
		fx.approvals = append(fx.approvals, p)
	}
	// Expiries fall due across the run, faults included.
	for i := range expiries {
		p, err := park(time.Now().Add(5*time.Second + runFor*time.Duration(i)/time.Duration(max(expiries, 1))))
		if err != nil {
			return fixture{}, err
		}
		fx.expiries = append(fx.expiries, p)
	}
	if _, fx.hostToken, err = auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeHost, "soak", &user.ID, nil); err != nil {
		return fixture{}, err
	}
	if _, fx.agentToken, err = auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeAgent, "soak agent", nil, &agent.ID); err != nil {
		return fixture{}, err
	}
	if err := declareAgentTools(ctx, st, ws.ID, agent.ID, toolURL); err != nil {
		return fixture{}, err
	}
	fx.review, err = seedReview(ctx, st, box, hookURL, hookSecret, dataURL, spec, reviews)
	return fx, err
}

// declareAgentTools saves the agent's echo and ask tools (seed 003's
// declarations, checked as the admin API checks them).
func declareAgentTools(ctx context.Context, st *store.Store, workspaceID, agentID, toolURL string) error {
	svc := agentcall.NewService(agentcall.Options{Store: st})
	for _, d := range []map[string]any{
		{"name": echoTool, "displayName": "Soak echo", "description": "Echoes its input.", "input": map[string]any{"type": "object"},
			"target": map[string]any{"type": "url", "url": toolURL + "/echo", "method": "POST", "body": "${input}"}},
		{"name": askTool, "displayName": "Soak ask", "description": "Asks a person.", "input": map[string]any{"type": "object"},
			"target": map[string]any{"type": "url", "url": toolURL + "/ask", "method": "POST", "body": "${input}"}},
	} {
		if _, err := svc.CreateDeclaration(ctx, workspaceID, agentID, "soak", models.MustJSON(d)); err != nil {
			return fmt.Errorf("declare %s: %w", d["name"], err)
		}
	}
	return nil
}

// seedReview makes the review workspace: an agent whose resume webhook is
// the soak's receiver, the same binding on the same data source, an app
// tool parking its tasks, n parked tasks and two reviewers.
func seedReview(ctx context.Context, st *store.Store, box *crypt.Box, hookURL, hookSecret, dataURL string,
	spec bindingspec.Spec, n int) (reviewFixture, error) {
	ws := models.Workspace{ID: models.NewID(), Name: "soak review", ReviewClaimLimit: models.DefaultReviewClaimLimit}
	sealedHook, err := box.Seal([]byte(hookSecret))
	if err != nil {
		return reviewFixture{}, err
	}
	sealed, err := box.SealJSON(datasource.Secrets{DSN: dataURL})
	if err != nil {
		return reviewFixture{}, err
	}
	agent := models.Agent{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak review", ResumeWebhookURL: hookURL, WebhookSecretEnc: sealedHook}
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak data", Kind: datasource.KindPostgres, SecretsEnc: sealed}
	b := models.Binding{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak review", BindingKind: bindingspec.KindPostgres,
		IntegrationID: &integ.ID, AllowedOperations: models.MustJSON(spec), Version: 1}
	bundle := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws.ID, Name: "soak review", SHA256: "-", ContentType: "text/html", StorageKey: "-"}
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "soak review",
		BaseTool: models.BaseAppTool, BundleID: &bundle.ID, BindingID: &b.ID, AwaitReview: true}
	rows := []any{&ws, &agent, &integ, &b, &bundle, &tool}
	users := make([]models.User, 2)
	for i := range users {
		users[i] = models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: fmt.Sprintf("reviewer%d@example.test", i), Role: models.RoleAdmin, PasswordHash: "-"}
		rows = append(rows, &users[i])
	}
	for _, row := range rows {
		if err := st.DB.WithContext(ctx).Create(row).Error; err != nil {
			return reviewFixture{}, fmt.Errorf("seed %T: %w", row, err)
		}
	}
	rf := reviewFixture{workspaceID: ws.ID}
	for range n {
		p, err := parkTask(ctx, st, ws.ID, agent.ID, tool.ID, time.Time{})
		if err != nil {
			return reviewFixture{}, err
		}
		rf.parked = append(rf.parked, p)
	}
	for i := range users {
		_, tok, err := auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeHost, "soak reviewer", &users[i].ID, nil)
		if err != nil {
			return reviewFixture{}, err
		}
		rf.reviewerTokens = append(rf.reviewerTokens, tok)
	}
	return rf, nil
}

// parkTask parks a new task of the agent on an app-tool step of tool with a
// pending await, its expiry scheduled at due (zero: none).
func parkTask(ctx context.Context, st *store.Store, workspaceID, agentID, toolID string, due time.Time) (parkedTask, error) {
	task := models.Task{ID: models.NewID(), WorkspaceID: workspaceID, AgentID: agentID, Status: models.TaskWaitingForInput}
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &toolID, Status: models.StepCompleted}
	aw := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}
	err := st.Tx(ctx, func(tx *gorm.DB) error {
		for _, row := range []any{&task, &step, &aw} {
			if err := tx.Create(row).Error; err != nil {
				return err
			}
		}
		if !due.IsZero() {
			return review.ScheduleAwaitExpiry(tx, workspaceID, aw.ID, due)
		}
		return nil
	})
	return parkedTask{taskID: task.ID, stepID: step.ID, awaitID: aw.ID, due: due}, err
}
