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
	// HostPrompts are the prompts the host shows the person for the
	// bundle: "reason" (request_reason) on the reviewer's page.
	HostPrompts []string `json:"host_prompts,omitempty"`
}

// artifactPage is the host page of one app-tool step.
type artifactPage struct {
	Task   task.Detail
	StepID string
	// Await is the step's await, when the step parked the task.
	Await *task.AwaitView
	// Descriptor and Init are set once a session is minted (POST): Init is
	// the JSON of the init message the host script posts.
	Descriptor artifact.Descriptor
	Init       string
}

// artifactStep loads the task and checks that :step is one of its app-tool
// steps, as both the page and the mint need.
func (s *server) artifactStep(c *fiber.Ctx) (artifactPage, error) {
	d, err := s.Tasks.Inspect(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return artifactPage{}, err
	}
	stepID := c.Params("step")
	if !slices.ContainsFunc(d.Steps, func(st task.StepView) bool { return st.ID == stepID && st.Kind == models.StepAppTool }) {
		return artifactPage{}, apperr.NotFoundf("task %s has no app-tool step %s", d.ID, stepID)
	}
	p := artifactPage{Task: d, StepID: stepID}
	for i, aw := range d.Awaits {
		if aw.CorrelationKey == stepID {
			p.Await = &d.Awaits[i]
		}
	}
	return p, nil
}

// showArtifact answers GET /tasks/:id/steps/:step/artifact: the step with
// the button that opens its artifact. A GET never mints a session: a link
// from anywhere can make a browser GET this page, and since a task keeps at
// most two live sessions, a mint would end the oldest, a reviewer's perhaps.
func (s *server) showArtifact(c *fiber.Ctx) error {
	p, err := s.artifactStep(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "artifact", "Artifact of "+shortID(p.StepID), "tasks", p)
}

// openArtifact answers POST /tasks/:id/steps/:step/artifact (a form with the
// CSRF token): the console as the host of an app-tool step. It mints a
// session for the signed-in admin and mounts the bundle in an iframe
// sandboxed to allow-scripts (never allow-same-origin); static/host.js posts
// the init message when the bundle posts {type:"ready"}. The page may frame
// the bundle origin and nothing else.
func (s *server) openArtifact(c *fiber.Ctx) error {
	p, err := s.artifactStep(c)
	if err != nil {
		return err
	}
	desc, err := s.Artifacts.Mint(c.UserContext(), artifact.MintRequest{WorkspaceID: adminOf(c).WorkspaceID, UserID: adminOf(c).ID, StepID: p.StepID})
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
	p.Descriptor, p.Init = desc, string(init)
	c.Set(fiber.HeaderContentSecurityPolicy, artifactCSP(s.bundleOrigin))
	return s.render(c, fiber.StatusOK, "artifact", "Artifact of "+shortID(desc.StepID), "tasks", p)
}
