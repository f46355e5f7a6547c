package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// initMessage is what the host posts to the bundle once it said it is
// ready: the session and everything the live descriptor tells the bundle.
type initMessage struct {
	Type         string           `json:"type"` // "init"
	SessionToken string           `json:"session_token"`
	ExpiresAt    time.Time        `json:"expires_at"`
	APIBase      string           `json:"api_base"` // runtime.api_base: verbs are api_base + "/" + verb
	Params       json.RawMessage  `json:"params"`
	Schema       models.JSON      `json:"schema"` // the tool's action_schema
	Theme        models.JSON      `json:"theme"`
	Runtime      artifact.Runtime `json:"runtime"`
	AwaitID      *string          `json:"await_id"`
}

// artifactPage is the host page of one app-tool step.
type artifactPage struct {
	Task       task.Detail
	StepID     string
	Descriptor artifact.Descriptor
	// Await is the step's await, when the step parked the task.
	Await *task.AwaitView
	// Init is the JSON of the init message the host script posts.
	Init string
}

// openArtifact answers GET /tasks/:id/steps/:step/artifact: the console as
// the host of an app-tool step. It mints a session for the signed-in admin
// and mounts the bundle in an iframe sandboxed to allow-scripts (never
// allow-same-origin); static/host.js posts the init message when the bundle
// posts {type:"ready"}. The page may frame the bundle origin and nothing else.
func (s *server) openArtifact(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	d, err := s.Tasks.Inspect(ctx, a.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	stepID := c.Params("step")
	if !slices.ContainsFunc(d.Steps, func(st task.StepView) bool { return st.ID == stepID && st.Kind == models.StepAppTool }) {
		return apperr.NotFoundf("task %s has no app-tool step %s", d.ID, stepID)
	}
	desc, err := s.Artifacts.Mint(ctx, artifact.MintRequest{WorkspaceID: a.WorkspaceID, UserID: a.ID, StepID: stepID})
	if err != nil {
		return err
	}
	init, err := json.Marshal(initMessage{
		Type: "init", SessionToken: desc.SessionToken, ExpiresAt: desc.ExpiresAt, APIBase: desc.Runtime.APIBase,
		Params: desc.Params, Schema: desc.ActionSchema, Theme: desc.Theme, Runtime: desc.Runtime, AwaitID: desc.AwaitID,
	})
	if err != nil {
		return fmt.Errorf("console: encode init message: %w", err)
	}
	p := artifactPage{Task: d, StepID: desc.StepID, Descriptor: desc, Init: string(init)}
	for i, aw := range d.Awaits {
		if aw.CorrelationKey == desc.StepID {
			p.Await = &d.Awaits[i]
		}
	}
	c.Set(fiber.HeaderContentSecurityPolicy, artifactCSP(s.bundleOrigin))
	return s.render(c, fiber.StatusOK, "artifact", "Artifact of "+shortID(desc.StepID), "tasks", p)
}
