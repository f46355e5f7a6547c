package toolrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/citation"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/integration"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// FeedToolRun is the feed event type of a recorded /run.
const FeedToolRun = "tool_run"

// Reply is what /run answers with 200: the tool's output, or the error it
// reported (a script that raised, a CSV not yet indexed, translation
// disabled).
type Reply struct {
	Kind   string          `json:"kind"`   // "run"
	Status string          `json:"status"` // "ok" or "error"
	Output json.RawMessage `json:"output"`
	Error  *string         `json:"error"`
}

// Runner runs /run jobs. Build one per worker (internal/platform).
type Runner struct {
	Store *store.Store
	Tools tool.Set
	// Files resolves structured_data_extraction's file_url; nil answers 501.
	Files *files.Service
	// Documents reads the text OCR read on the document's pages without a
	// text layer (its OCR pass, waited for or run here); nil sends none.
	Documents *capability.Service
	// Log is told the cause of a tool failure that has one (what the
	// bundle is not shown); nil logs nothing.
	Log *slog.Logger

	// Integrations reads a configured tool's integration from the process's
	// one cache, which a change evicts on every replica and worker
	// (integration.Lookup); required when a run's tool names one.
	Integrations *integration.Lookup

	agents ttlCache[models.Agent]
	tools  ttlCache[models.ConfiguredTool]
}

// Run runs job a whose id (the asynq task id) keys its records, so a job
// that ran twice could not record twice. A tool-reported failure is a
// Reply with its error; any other error is the caller's status.
func (r *Runner) Run(ctx context.Context, runID string, a jobs.RunTool) (json.RawMessage, error) {
	call, err := r.resolve(ctx, a)
	if err != nil {
		return nil, err
	}
	res, err := r.Tools.Run(ctx, call)
	reply := Reply{Kind: "run", Status: "ok", Output: res.Output}
	units := res.Units
	if err != nil {
		f, failed := tool.AsFailure(err)
		if !failed {
			return nil, err
		}
		reply = Reply{Kind: "run", Status: "error", Error: &f.Message}
		units = f.Units
		if f.Cause != nil && r.Log != nil {
			r.Log.InfoContext(ctx, "tool failure", "tool", a.BaseTool, "error", f.Message, "cause", f.Cause.Error())
		}
	}
	if len(reply.Output) == 0 {
		reply.Output = json.RawMessage("null")
	}
	cites, err := r.citations(call, &reply)
	if err != nil {
		return nil, err
	}
	if err := r.record(ctx, runID, a, call, &reply, units, cites); err != nil {
		if ctx.Err() != nil {
			return nil, tool.Stopped(ctx)
		}
		return nil, err
	}
	return json.Marshal(reply)
}

// resolve builds the executor's call: everything that needs the platform
// database or the session's scope.
func (r *Runner) resolve(ctx context.Context, a jobs.RunTool) (tool.Call, error) {
	// Rows usually come from the caches: the session is made only to load,
	// with the load's own context (ttlCache).
	db := func(ctx context.Context) *gorm.DB { return r.Store.DB.WithContext(ctx) }
	call := tool.Call{BaseTool: a.BaseTool, Input: a.Input}
	agent, err := r.agents.get(ctx, a.WorkspaceID+"/"+a.AgentID, func(ctx context.Context) (models.Agent, error) {
		var row models.Agent
		err := db(ctx).Where("id = ? AND workspace_id = ?", a.AgentID, a.WorkspaceID).Take(&row).Error
		return row, notFound(err, "the session's agent")
	})
	if err != nil {
		return call, err
	}
	call.Agent = agent
	if a.ConfiguredToolID != "" {
		t, err := r.tools.get(ctx, a.WorkspaceID+"/"+a.AgentID+"/"+a.ConfiguredToolID, func(ctx context.Context) (models.ConfiguredTool, error) {
			var row models.ConfiguredTool
			err := db(ctx).Where("id = ? AND agent_id = ? AND workspace_id = ?", a.ConfiguredToolID, a.AgentID, a.WorkspaceID).Take(&row).Error
			return row, notFound(err, "the configured tool")
		})
		if err != nil {
			return call, err
		}
		call.Tool = &t
		if id := integrationID(t); id != "" {
			in, err := r.Integrations.Integration(ctx, id)
			if apperr.Is(err, apperr.NotFound) || err == nil && in.WorkspaceID != a.WorkspaceID {
				return call, apperr.Forbiddenf("configured tool %q names an integration outside this workspace", t.DisplayName)
			}
			if err != nil {
				return call, err
			}
			call.Integration = &in
		}
	}
	if row, _ := basetool.Lookup(a.BaseTool); row.ReadsDocument {
		doc, err := r.document(ctx, a)
		if err != nil {
			return call, err
		}
		call.Document = doc
	}
	return call, nil
}

// integrationID is the SQL tools' bound integration: the column, or the
// config's integration_id.
func integrationID(t models.ConfiguredTool) string {
	if t.IntegrationID != nil {
		return *t.IntegrationID
	}
	var cfg struct {
		IntegrationID string `json:"integration_id"`
	}
	_ = t.Config.Decode(&cfg)
	return cfg.IntegrationID
}

// document reads the file behind input.file_url, which must be a managed
// URL of the session's own task. An absent file_url is left to the
// executor's own 400.
func (r *Runner) document(ctx context.Context, a jobs.RunTool) (*tool.Document, error) {
	var in struct {
		FileURL string `json:"file_url"`
	}
	if err := tool.DecodeInput(a.Input, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.FileURL) == "" {
		return nil, nil
	}
	if r.Files == nil {
		return nil, apperr.NotImplementedf("structured_data_extraction cannot read files on this deployment")
	}
	f, err := r.Files.VerifyURLForTask(ctx, in.FileURL, a.TaskID)
	if err != nil {
		return nil, err
	}
	data, err := r.Files.Content(ctx, f)
	if err != nil {
		return nil, err
	}
	doc := &tool.Document{Name: f.Name, ContentType: f.ContentType, Data: data}
	if r.Documents != nil {
		res, pages, err := r.Documents.OCRText(ctx, f)
		if err != nil {
			return nil, err
		}
		doc.OCRPages = res.OCRPages
		for _, p := range pages {
			doc.OCR = append(doc.OCR, tool.PageText{Page: p.Page, Text: p.Text})
		}
	}
	return doc, nil
}

func notFound(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return apperr.Forbiddenf("%s no longer exists", what)
	}
	return fmt.Errorf("toolrun: load %s: %w", what, err)
}

// citations reads the citations of a successful reply's output
// (internal/citation): one without a file cites the document the tool
// read. Malformed ones turn the reply into the tool's reported error, so
// nothing of them is stored and the bundle is told which one.
func (r *Runner) citations(call tool.Call, reply *Reply) ([]citation.Input, error) {
	if reply.Error != nil {
		return nil, nil
	}
	file := ""
	if call.Document != nil {
		file = call.Document.Name
	}
	cites, err := citation.Parse(reply.Output, file)
	if apperr.Is(err, apperr.Invalid) {
		_, _, why := apperr.Public(err)
		msg := "the tool's result has malformed citations: " + why
		*reply = Reply{Kind: "run", Status: "error", Output: json.RawMessage("null"), Error: &msg}
		return nil, nil
	}
	return cites, err
}

// record writes the run's step, feed card, usage and citations in one
// transaction: a step when the op records or the run billed, a card when
// the op records, usage when it billed, citations when the output carries
// them (reply's output then gets their ids). The step's id is the run's
// id, so a second run of the same job fails to insert instead of recording
// twice.
func (r *Runner) record(ctx context.Context, runID string, a jobs.RunTool, call tool.Call, reply *Reply, units int, cites []citation.Input) error {
	if len(cites) > 0 {
		return r.Store.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			stored, err := citation.Save(ctx, tx, a.TaskID, runID, cites)
			if err != nil {
				return err
			}
			if reply.Output, err = citation.Attach(reply.Output, stored); err != nil {
				return err
			}
			return r.recordRun(ctx, tx, runID, a, call, *reply, units)
		})
	}
	if !a.Record && units == 0 {
		return nil
	}
	return r.Store.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return r.recordRun(ctx, tx, runID, a, call, *reply, units)
	})
}

// recordRun writes the run's step, feed card and usage in tx.
func (r *Runner) recordRun(ctx context.Context, tx *gorm.DB, runID string, a jobs.RunTool, call tool.Call, reply Reply, units int) error {
	if !a.Record && units == 0 {
		return nil
	}
	kind := models.StepToolRun
	if row, _ := basetool.Lookup(a.BaseTool); row.RunStepKind != "" {
		kind = row.RunStepKind
	}
	status, errText := models.StepCompleted, ""
	if reply.Error != nil {
		status, errText = models.StepFailed, *reply.Error
	}
	name := a.BaseTool
	var toolID *string
	if call.Tool != nil {
		name, toolID = call.Tool.DisplayName, &call.Tool.ID
	}
	parent := a.StepID
	step := models.Step{
		ID: runID, TaskID: a.TaskID, ParentStepID: &parent, Kind: kind, ConfiguredToolID: toolID,
		Status: status, Input: models.JSON(a.Input), Output: models.JSON(reply.Output), Error: errText,
	}
	if err := tx.Create(&step).Error; err != nil {
		return fmt.Errorf("toolrun: record step: %w", err)
	}
	if units > 0 {
		u := models.UsageRecord{ID: models.NewID(), TaskID: a.TaskID, StepID: runID, Tool: a.BaseTool, Units: float64(units), Rate: basetool.RateOf(a.BaseTool)}
		if err := tx.Create(&u).Error; err != nil {
			return fmt.Errorf("toolrun: record usage: %w", err)
		}
	}
	if !a.Record {
		return nil
	}
	card := models.FeedEvent{
		TaskID: a.TaskID, StepID: &step.ID, Type: FeedToolRun, Name: name, Actor: a.Actor,
		Payload: models.MustJSON(map[string]any{"op": a.Op, "tool": name, "base_tool": a.BaseTool, "status": status, "error": reply.Error, "units": units}),
	}
	return feed.Insert(ctx, tx, false, card)
}
