package agentcall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// MaxDeclarationsPerAgent bounds an agent's tools: every one is offered to
// the model on every turn.
const MaxDeclarationsPerAgent = 128

// DeclarationView is a declaration as the admin API shows it: the seed's
// fields and ours.
type DeclarationView struct {
	ID          string          `json:"id"`
	AgentID     string          `json:"agent_id"`
	Name        string          `json:"name"`
	DisplayName string          `json:"displayName"`
	Description string          `json:"description"`
	Input       json.RawMessage `json:"input"`
	Target      json.RawMessage `json:"target"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

func declarationView(d models.AgentToolDeclaration) DeclarationView {
	return DeclarationView{ID: d.ID, AgentID: d.AgentID, Name: d.Name, DisplayName: d.DisplayName, Description: d.Description,
		Input: json.RawMessage(d.Input), Target: json.RawMessage(d.Target), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

// Wire is the declaration's JSON as the seed writes it (what a patch
// merges into, and what the console's editor shows), indented.
func Wire(v DeclarationView) string {
	b, err := json.MarshalIndent(map[string]any{
		"name": v.Name, "displayName": v.DisplayName, "description": v.Description, "input": v.Input, "target": v.Target,
	}, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}

// wireOf is the stored declaration's JSON as the seed writes it.
func wireOf(d models.AgentToolDeclaration) ([]byte, error) {
	return json.Marshal(map[string]any{
		"name": d.Name, "displayName": d.DisplayName, "description": d.Description,
		"input": json.RawMessage(d.Input), "target": json.RawMessage(d.Target),
	})
}

// checkOptions are the save-time options of workspaceID's declarations.
func (s *Service) checkOptions(workspaceID string) agenttool.CheckOptions {
	return agenttool.CheckOptions{WorkspaceID: workspaceID, Components: s.components}
}

// ownAgent checks that agentID is an agent of workspaceID (404 otherwise).
func ownAgent(ctx context.Context, db *gorm.DB, workspaceID, agentID string) (models.Agent, error) {
	var a models.Agent
	if !models.IsID(agentID) {
		return a, apperr.NotFoundf("agent not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ?", agentID, workspaceID).Take(&a).Error
	return a, store.NotFound(err, "agentcall: find agent", "agent")
}

// ListDeclarations returns an agent's tools by name.
func (s *Service) ListDeclarations(ctx context.Context, workspaceID, agentID string) ([]DeclarationView, error) {
	db := s.st.DB.WithContext(ctx)
	if _, err := ownAgent(ctx, db, workspaceID, agentID); err != nil {
		return nil, err
	}
	var rows []models.AgentToolDeclaration
	if err := db.Where("agent_id = ?", agentID).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("agentcall: list declarations: %w", err)
	}
	out := make([]DeclarationView, 0, len(rows))
	for _, r := range rows {
		out = append(out, declarationView(r))
	}
	return out, nil
}

// GetDeclaration returns one of an agent's tools.
func (s *Service) GetDeclaration(ctx context.Context, workspaceID, agentID, id string) (DeclarationView, error) {
	d, err := findDeclaration(ctx, s.st.DB, workspaceID, agentID, id)
	if err != nil {
		return DeclarationView{}, err
	}
	return declarationView(d), nil
}

func findDeclaration(ctx context.Context, db *gorm.DB, workspaceID, agentID, id string) (models.AgentToolDeclaration, error) {
	var d models.AgentToolDeclaration
	if !models.IsID(id) {
		return d, apperr.NotFoundf("agent tool not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND agent_id = ? AND workspace_id = ?", id, agentID, workspaceID).Take(&d).Error
	return d, store.NotFound(err, "agentcall: find declaration", "agent tool")
}

// CreateDeclaration saves a new tool of an agent from its seed-003 JSON
// (agenttool.ParseDeclaration: unknown fields, a bad name, a schema that
// does not compile strictly, a bad target, Authorization in an app
// target's headers are 400); a name the agent uses already is 409.
func (s *Service) CreateDeclaration(ctx context.Context, workspaceID, agentID, actor string, raw []byte) (DeclarationView, error) {
	db := s.st.DB.WithContext(ctx)
	if _, err := ownAgent(ctx, db, workspaceID, agentID); err != nil {
		return DeclarationView{}, err
	}
	d, err := agenttool.ParseDeclaration(ctx, raw, s.checkOptions(workspaceID))
	if err != nil {
		return DeclarationView{}, err
	}
	now := time.Now().UTC()
	row := models.AgentToolDeclaration{ID: models.NewID(), WorkspaceID: workspaceID, AgentID: agentID, CreatedAt: now, UpdatedAt: now}
	fill(&row, d)
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&models.AgentToolDeclaration{}).Where("agent_id = ?", agentID).Count(&n).Error; err != nil {
			return fmt.Errorf("agentcall: count declarations: %w", err)
		}
		if n >= MaxDeclarationsPerAgent {
			return apperr.Conflictf("the agent has %d tools; at most %d are allowed", n, MaxDeclarationsPerAgent)
		}
		if err := tx.Create(&row).Error; err != nil {
			return saveError(err, row)
		}
		return audit.Record(ctx, tx, audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "agent_tool.create",
			TargetType: "agent_tool", TargetID: row.ID, Detail: map[string]any{"agent_id": agentID, "name": row.Name, "target": d.Target.String()}})
	})
	if err != nil {
		return DeclarationView{}, err
	}
	return declarationView(row), nil
}

// UpdateDeclaration applies a JSON merge patch of the seed's fields (the
// whole result is checked as a create is).
func (s *Service) UpdateDeclaration(ctx context.Context, workspaceID, agentID, actor, id string, patch []byte) (DeclarationView, error) {
	return s.save(ctx, workspaceID, agentID, actor, id, patch, true)
}

// ReplaceDeclaration saves a whole new version of a declaration (the
// console's editor, which shows the whole JSON).
func (s *Service) ReplaceDeclaration(ctx context.Context, workspaceID, agentID, actor, id string, raw []byte) (DeclarationView, error) {
	return s.save(ctx, workspaceID, agentID, actor, id, raw, false)
}

func (s *Service) save(ctx context.Context, workspaceID, agentID, actor, id string, body []byte, merge bool) (DeclarationView, error) {
	var out models.AgentToolDeclaration
	err := s.st.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := findDeclaration(ctx, tx, workspaceID, agentID, id)
		if err != nil {
			return err
		}
		doc := body
		if merge {
			var shape map[string]json.RawMessage
			if err := strictjson.Decode(body, &shape); err != nil {
				return err
			}
			wire, err := wireOf(cur)
			if err != nil {
				return fmt.Errorf("agentcall: encode declaration: %w", err)
			}
			if doc, err = strictjson.Merge(json.RawMessage(wire), body); err != nil {
				return err
			}
		}
		d, err := agenttool.ParseDeclaration(ctx, doc, s.checkOptions(workspaceID))
		if err != nil {
			return err
		}
		fill(&cur, d)
		cur.UpdatedAt = time.Now().UTC()
		if err := tx.Select("*").Updates(&cur).Error; err != nil {
			return saveError(err, cur)
		}
		out = cur
		return audit.Record(ctx, tx, audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "agent_tool.update",
			TargetType: "agent_tool", TargetID: cur.ID, Detail: map[string]any{"agent_id": agentID, "name": cur.Name, "target": d.Target.String()}})
	})
	if err != nil {
		return DeclarationView{}, err
	}
	return declarationView(out), nil
}

// DeleteDeclaration removes one of an agent's tools; its past calls stay.
func (s *Service) DeleteDeclaration(ctx context.Context, workspaceID, agentID, actor, id string) error {
	return s.st.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := findDeclaration(ctx, tx, workspaceID, agentID, id)
		if err != nil {
			return err
		}
		if err := tx.Delete(&cur).Error; err != nil {
			return fmt.Errorf("agentcall: delete declaration: %w", err)
		}
		return audit.Record(ctx, tx, audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "agent_tool.delete",
			TargetType: "agent_tool", TargetID: cur.ID, Detail: map[string]any{"agent_id": agentID, "name": cur.Name}})
	})
}

// fill copies a checked declaration onto its row.
func fill(row *models.AgentToolDeclaration, d agenttool.Declaration) {
	row.Name, row.DisplayName, row.Description = d.Name, d.DisplayName, d.Description
	row.Input = models.JSON(compact(d.Input))
	row.Target = models.MustJSON(d.Target)
}

// decode turns a stored row back into a declaration.
func decode(row models.AgentToolDeclaration) (agenttool.Declaration, error) {
	d := agenttool.Declaration{Name: row.Name, DisplayName: row.DisplayName, Description: row.Description, Input: json.RawMessage(row.Input)}
	if err := json.Unmarshal(row.Target, &d.Target); err != nil {
		return d, fmt.Errorf("agentcall: stored target of %s: %w", row.ID, err)
	}
	return d, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

func saveError(err error, d models.AgentToolDeclaration) error {
	if store.IsUniqueViolation(err) {
		return apperr.Conflictf("the agent already has a tool named %q", d.Name)
	}
	return fmt.Errorf("agentcall: save declaration: %w", err)
}
