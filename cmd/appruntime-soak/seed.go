package main

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

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
	writeStep            string // the step whose session writes and reads
	mintStep             string // the step the mint traffic mints on
	runSteps             []string
	approvals            []parkedTask
	expiries             []parkedTask
}

// seed creates one tenant: a data-source integration (tables invoices and
// decisions on the data sources' server), a binding with a read, a write,
// an approve action resolving the await and a CSV lookup tool, an app tool
// parking its task, tasks for writes, mints and /run, parked tasks for the
// approvals, parked tasks whose awaits expire during the run, and an agent
// whose resume webhook is the soak's receiver.
func seed(ctx context.Context, dbURL, dataURL string, secretsKey []byte, hookURL, hookSecret string,
	approvals, expiries, runSurfaces int, runFor time.Duration) (fixture, error) {
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
		Tools:   []bindingspec.Tool{{Op: "lookup", Tool: "soak lookup", Params: []string{"match_criteria", "return_columns"}}},
	}
	b := models.Binding{ID: models.NewID(), WorkspaceID: ws.ID, Name: "soak", BindingKind: bindingspec.KindPostgres,
		IntegrationID: &integ.ID, AllowedOperations: models.MustJSON(spec), Version: 1}
	lookup := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "soak lookup",
		BaseTool: models.BaseCSVLookup, Config: models.MustJSON(map[string]any{"file_name": "soak.csv"})}
	bundle := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws.ID, Name: "soak", SHA256: "-", ContentType: "text/html", StorageKey: "-"}
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: "soak review",
		BaseTool: models.BaseAppTool, BundleID: &bundle.ID, BindingID: &b.ID, AwaitReview: true}
	for _, row := range []any{&ws, &user, &agent, &integ, &b, &lookup, &bundle, &tool} {
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
	// A task keeps at most two live sessions: each /run surface has a task.
	for range runSurfaces {
		_, s, err := running()
		if err != nil {
			return fixture{}, err
		}
		fx.runSteps = append(fx.runSteps, s)
	}
	if err := loadseed.UploadCSV(ctx, st, secretsKey, writeTask, "soak.csv", csvRows); err != nil {
		return fixture{}, err
	}
	park := func(due time.Time) (parkedTask, error) {
		task := models.Task{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, Status: models.TaskWaitingForInput}
		step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID, Status: models.StepCompleted}
		aw := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}
		err := st.Tx(ctx, func(tx *gorm.DB) error {
			for _, row := range []any{&task, &step, &aw} {
				if err := tx.Create(row).Error; err != nil {
					return err
				}
			}
			if !due.IsZero() {
				return review.ScheduleAwaitExpiry(tx, ws.ID, aw.ID, due)
			}
			return nil
		})
		return parkedTask{taskID: task.ID, stepID: step.ID, awaitID: aw.ID, due: due}, err
	}
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
	_, fx.hostToken, err = auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeHost, "soak", &user.ID, nil)
	return fx, err
}
