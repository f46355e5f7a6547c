package artifact

import (
	"encoding/json"
	"time"

	"github.com/appruntime/appruntime/models"
)

// InitMessage is the bridge's init message a host posts to the bundle once
// it is ready: the session, the runtime descriptor, the step's params, the
// tool's action schema and the theme (docs/bundle-authors.md#the-bundle-sdk).
// Every host of this repository builds it here: the console's artifact
// page and `appruntime bundle dev`.
type InitMessage struct {
	Type         string          `json:"type"` // "init"
	SessionToken string          `json:"session_token"`
	ExpiresAt    time.Time       `json:"expires_at"`
	APIBase      string          `json:"api_base"` // runtime.api_base: verbs are api_base + "/" + verb
	Params       json.RawMessage `json:"params"`
	Schema       models.JSON     `json:"schema"` // the tool's action_schema
	Theme        models.JSON     `json:"theme"`
	Runtime      Runtime         `json:"runtime"`
	AwaitID      *string         `json:"await_id"`
	// HostPrompts are the prompts the host shows the person for the
	// bundle: "reason" (request_reason) on the reviewer's page.
	HostPrompts []string `json:"host_prompts,omitempty"`
}

// Init is the init message of a minted descriptor.
func (d Descriptor) Init() InitMessage {
	return InitMessage{Type: "init", SessionToken: d.SessionToken, ExpiresAt: d.ExpiresAt, APIBase: d.Runtime.APIBase,
		Params: d.Params, Schema: d.ActionSchema, Theme: d.Theme, Runtime: d.Runtime, AwaitID: d.AwaitID}
}
