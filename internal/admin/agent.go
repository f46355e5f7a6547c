package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/keydetail"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// MaxSummaryInstructionsLength bounds an agent's summary template, which is
// sent to the LLM on every summary pass.
const MaxSummaryInstructionsLength = 8000

// AgentInput is an agent as the admin API takes it.
type AgentInput struct {
	Name                       string                 `json:"name"`
	KeyDefinitions             []keydetail.Definition `json:"key_definitions,omitempty"`
	SummaryInstructions        string                 `json:"summary_instructions,omitempty"`
	PriorityField              string                 `json:"priority_field,omitempty"`
	DocumentTranslationEnabled bool                   `json:"document_translation_enabled,omitempty"`
	ResumeWebhookURL           string                 `json:"resume_webhook_url,omitempty"`
	// WebhookEvents are the event types the webhook receives; nil (absent
	// or null) is every type, an empty list none
	// (docs/agent-platforms.md#webhook-event-catalogue).
	WebhookEvents *[]string `json:"webhook_events,omitempty"`
}

// AgentView is an agent as the admin API shows it. WebhookSecret is set only
// in the reply that created or rotated it.
type AgentView struct {
	ID                         string                 `json:"id"`
	Name                       string                 `json:"name"`
	KeyDefinitions             []keydetail.Definition `json:"key_definitions"`
	SummaryInstructions        string                 `json:"summary_instructions"`
	PriorityField              string                 `json:"priority_field"`
	DocumentTranslationEnabled bool                   `json:"document_translation_enabled"`
	ResumeWebhookURL           string                 `json:"resume_webhook_url"`
	WebhookEvents              []string               `json:"webhook_events"` // null: every type
	WebhookSecretSet           bool                   `json:"webhook_secret_set"`
	WebhookSecret              string                 `json:"webhook_secret,omitempty"`
	CreatedAt                  time.Time              `json:"created_at"`
	UpdatedAt                  time.Time              `json:"updated_at"`
}

func agentView(a models.Agent) AgentView {
	defs, _ := keydetail.Of(a)
	if defs == nil {
		defs = []keydetail.Definition{}
	}
	return AgentView{
		ID: a.ID, Name: a.Name, KeyDefinitions: defs, SummaryInstructions: a.SummaryInstructions,
		PriorityField: a.PriorityField, DocumentTranslationEnabled: a.DocumentTranslationEnabled,
		ResumeWebhookURL: a.ResumeWebhookURL, WebhookEvents: a.WebhookEventList(), WebhookSecretSet: len(a.WebhookSecretEnc) > 0,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

func agentInput(a models.Agent) AgentInput {
	defs, _ := keydetail.Of(a)
	in := AgentInput{
		Name: a.Name, KeyDefinitions: defs, SummaryInstructions: a.SummaryInstructions, PriorityField: a.PriorityField,
		DocumentTranslationEnabled: a.DocumentTranslationEnabled, ResumeWebhookURL: a.ResumeWebhookURL,
	}
	if events := a.WebhookEventList(); events != nil {
		in.WebhookEvents = &events
	}
	return in
}

// checkAgent validates in onto a.
func checkAgent(a *models.Agent, in AgentInput) error {
	var err error
	if a.Name, err = field.Name(in.Name, "name", MaxNameLength); err != nil {
		return err
	}
	if err := keydetail.Check(in.KeyDefinitions); err != nil {
		return err
	}
	if len(in.KeyDefinitions) > 0 {
		a.KeyDefinitions = models.MustJSON(in.KeyDefinitions)
	} else {
		a.KeyDefinitions = nil
	}
	if len(in.SummaryInstructions) > MaxSummaryInstructionsLength {
		return apperr.Invalidf("summary_instructions is longer than %d characters", MaxSummaryInstructionsLength)
	}
	a.SummaryInstructions = strings.TrimSpace(in.SummaryInstructions)
	a.PriorityField = strings.TrimSpace(in.PriorityField)
	if a.PriorityField != "" && !keydetail.Name.MatchString(a.PriorityField) {
		return apperr.Invalidf("priority_field %q must start with a letter or _ and hold only letters, digits and _", a.PriorityField)
	}
	a.DocumentTranslationEnabled = in.DocumentTranslationEnabled
	if a.ResumeWebhookURL, err = checkHTTPURL(in.ResumeWebhookURL, "resume_webhook_url", true); err != nil {
		return err
	}
	a.WebhookEvents = nil
	if in.WebhookEvents != nil {
		if err := webhook.ValidateEventTypes(*in.WebhookEvents); err != nil {
			return apperr.Invalidf("%v", err)
		}
		a.WebhookEvents = models.MustJSON(*in.WebhookEvents)
	}
	return nil
}

// sealKeyring seals an endpoint's webhook keyring (internal/webhook) as the
// agent's stored webhook secret.
func (s *Service) sealKeyring(k webhook.Keyring) ([]byte, error) {
	b, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("admin: encode webhook keyring: %w", err)
	}
	return s.sealBytes(b)
}

// ListAgents returns the workspace's agents by name.
func (s *Service) ListAgents(ctx context.Context, workspaceID string) ([]AgentView, error) {
	var rows []models.Agent
	if err := s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("name, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("admin: list agents: %w", err)
	}
	out := make([]AgentView, 0, len(rows))
	for _, a := range rows {
		out = append(out, agentView(a))
	}
	return out, nil
}

// GetAgent returns an agent of the workspace.
func (s *Service) GetAgent(ctx context.Context, workspaceID, id string) (AgentView, error) {
	var a models.Agent
	if err := take(ctx, s.st.DB, &a, workspaceID, id, "agent"); err != nil {
		return AgentView{}, err
	}
	return agentView(a), nil
}

// CreateAgent creates an agent with a fresh webhook signing secret, which
// the reply carries this once (sealed at rest, never shown again).
func (s *Service) CreateAgent(ctx context.Context, workspaceID, actor string, in AgentInput) (AgentView, error) {
	a := models.Agent{ID: models.NewID(), WorkspaceID: workspaceID}
	if err := checkAgent(&a, in); err != nil {
		return AgentView{}, err
	}
	secret := webhook.NewSecret()
	sealed, err := s.sealKeyring(webhook.Keyring{Current: secret})
	if err != nil {
		return AgentView{}, err
	}
	a.WebhookSecretEnc = sealed
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "agent.create", TargetType: "agent", TargetID: a.ID,
		Detail: map[string]any{"name": a.Name}}
	err = s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := tx.Create(&a).Error; err != nil {
			return fmt.Errorf("admin: create agent: %w", err)
		}
		return nil
	})
	if err != nil {
		return AgentView{}, err
	}
	v := agentView(a)
	v.WebhookSecret = secret.String()
	return v, nil
}

// UpdateAgent applies a merge patch to an agent of the workspace.
func (s *Service) UpdateAgent(ctx context.Context, workspaceID, actor, id string, patch []byte) (AgentView, error) {
	var a models.Agent
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "agent.update", TargetType: "agent", TargetID: id,
		Detail: map[string]any{"patch": json.RawMessage(patch)}}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := take(ctx, tx, &a, workspaceID, id, "agent"); err != nil {
			return err
		}
		var in AgentInput
		if err := strictjson.MergeInto(agentInput(a), patch, &in); err != nil {
			return err
		}
		field := a.PriorityField
		if err := checkAgent(&a, in); err != nil {
			return err
		}
		if a.PriorityField != field && s.reprioritise != nil {
			if err := s.reprioritise(ctx, tx, a.ID, a.PriorityField); err != nil {
				return err
			}
		}
		a.UpdatedAt = time.Now().UTC()
		if err := tx.Select("name", "key_definitions", "summary_instructions", "priority_field",
			"document_translation_enabled", "resume_webhook_url", "webhook_events", "updated_at").Updates(&a).Error; err != nil {
			return fmt.Errorf("admin: update agent: %w", err)
		}
		return nil
	})
	if err != nil {
		return AgentView{}, err
	}
	return agentView(a), nil
}

// RotateWebhookSecret gives an agent a fresh webhook signing secret and
// returns the agent with it, shown this once. The secret it replaces keeps
// signing beside it for overlap (webhook.Keyring.Rotate: 0 retires it at
// once, for a leaked secret; at most webhook.MaxRotationOverlap), so every
// delivery in the overlap carries both signatures.
func (s *Service) RotateWebhookSecret(ctx context.Context, workspaceID, actor, id string, overlap time.Duration) (AgentView, error) {
	if overlap < 0 || overlap > webhook.MaxRotationOverlap {
		return AgentView{}, apperr.Invalidf("overlap_seconds is 0 to %d", int(webhook.MaxRotationOverlap.Seconds()))
	}
	next := webhook.NewSecret()
	v, err := s.replaceWebhookSecret(ctx, workspaceID, actor, id, "agent.rotate_webhook_secret",
		map[string]any{"overlap_seconds": int(overlap.Seconds())},
		func(old webhook.Keyring) (webhook.Keyring, error) { return old.Rotate(next, time.Now(), overlap) })
	if err != nil {
		return AgentView{}, err
	}
	v.WebhookSecret = next.String()
	return v, nil
}

// replaceWebhookSecret seals next(the agent's current keyring) as its
// webhook keyring, audited as action with detail.
func (s *Service) replaceWebhookSecret(ctx context.Context, workspaceID, actor, id, action string, detail map[string]any,
	next func(webhook.Keyring) (webhook.Keyring, error)) (AgentView, error) {
	var a models.Agent
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: action, TargetType: "agent", TargetID: id, Detail: detail}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := take(ctx, tx, &a, workspaceID, id, "agent"); err != nil {
			return err
		}
		var old webhook.Keyring
		if len(a.WebhookSecretEnc) > 0 && s.box != nil {
			opened, err := s.box.Open(a.WebhookSecretEnc)
			if err != nil {
				return fmt.Errorf("admin: open webhook secret: %w", err)
			}
			if old, err = webhook.ParseStoredKeyring(opened); err != nil {
				return fmt.Errorf("admin: read webhook secret of agent %s: %w", id, err)
			}
		}
		k, err := next(old)
		if err != nil {
			return err
		}
		sealed, err := s.sealKeyring(k)
		if err != nil {
			return err
		}
		a.WebhookSecretEnc, a.UpdatedAt = sealed, time.Now().UTC()
		if err := tx.Select("webhook_secret_enc", "updated_at").Updates(&a).Error; err != nil {
			return fmt.Errorf("admin: set webhook secret: %w", err)
		}
		return nil
	})
	if err != nil {
		return AgentView{}, err
	}
	return agentView(a), nil
}

// DeleteAgent deletes an agent of the workspace with its tokens, configured
// tools and tasks.
func (s *Service) DeleteAgent(ctx context.Context, workspaceID, actor, id string) error {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "agent.delete", TargetType: "agent", TargetID: id}
	return s.change(ctx, &e, func(tx *gorm.DB) error {
		var a models.Agent
		if err := take(ctx, tx, &a, workspaceID, id, "agent"); err != nil {
			return err
		}
		e.Detail = map[string]any{"name": a.Name}
		if err := s.revokeCachedTokensOf(ctx, tx, "agent_id", a.ID); err != nil {
			return err
		}
		return inUse(tx.Delete(&models.Agent{}, "id = ?", a.ID).Error, "agent", "other rows")
	})
}
