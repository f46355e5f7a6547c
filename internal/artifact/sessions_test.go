package artifact_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestLiveSessionsAndRevoke(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	rd := testkit.Redis(t)
	ctx := context.Background()
	issuer, err := session.NewIssuer(session.IssuerOptions{Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix,
		Keys: []config.Key{{ID: "test", Secret: testkit.TestKey}}, Issuer: "appruntime"})
	require.NoError(t, err)
	t.Cleanup(issuer.Close)
	m := &artifact.Minter{Store: st, Sessions: issuer}
	tn := testkit.NewTenant(t, st.DB)
	other := testkit.NewTenant(t, st.DB)

	newSession := func(ws string, agentID string, user *string, expires time.Time, revoked *time.Time) models.AppSession {
		tk := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agentID, Title: "task of " + ws[:8], Status: models.TaskWaitingForInput}
		require.NoError(t, st.DB.Create(&tk).Error)
		step := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
		require.NoError(t, st.DB.Create(&step).Error)
		s := models.AppSession{ID: models.NewID(), WorkspaceID: ws, TaskID: tk.ID, StepID: step.ID, UserID: user,
			ExpiresAt: expires, RevokedAt: revoked}
		require.NoError(t, st.DB.Create(&s).Error)
		return s
	}
	now := time.Now().UTC()
	liveTask := newSession(tn.Workspace.ID, tn.Agent.ID, nil, now.Add(-time.Hour), nil) // an old session gives a task and a step
	token, claims, err := issuer.Mint(ctx, session.MintInput{WorkspaceID: tn.Workspace.ID, TaskID: liveTask.TaskID, AgentID: tn.Agent.ID,
		StepID: liveTask.StepID, ConfiguredToolID: models.NewID(), BindingID: models.NewID(), UserID: tn.Admin.ID})
	require.NoError(t, err)
	var live models.AppSession
	require.NoError(t, st.DB.Where("id = ?", claims.SessionID).Take(&live).Error)
	newSession(tn.Workspace.ID, tn.Agent.ID, nil, now.Add(-time.Minute), nil)                    // expired
	newSession(tn.Workspace.ID, tn.Agent.ID, nil, now.Add(10*time.Minute), &now)                 // revoked
	foreign := newSession(other.Workspace.ID, other.Agent.ID, nil, now.Add(10*time.Minute), nil) // another workspace

	list, err := m.LiveSessions(ctx, tn.Workspace.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, live.ID, list[0].ID)
	require.Equal(t, tn.Admin.Email, list[0].UserEmail)
	require.Equal(t, "task of "+tn.Workspace.ID[:8], list[0].TaskTitle)
	_, err = issuer.Verify(ctx, token)
	require.NoError(t, err)

	err = m.RevokeSession(ctx, tn.Workspace.ID, "user:"+tn.Admin.ID, foreign.ID)
	require.True(t, apperr.Is(err, apperr.NotFound), "another workspace's session: %v", err)
	require.NoError(t, st.DB.Where("id = ?", foreign.ID).Take(&foreign).Error)
	require.Nil(t, foreign.RevokedAt)

	require.NoError(t, m.RevokeSession(ctx, tn.Workspace.ID, "user:"+tn.Admin.ID, live.ID))
	require.NoError(t, st.DB.Where("id = ?", live.ID).Take(&live).Error)
	require.NotNil(t, live.RevokedAt)
	_, err = issuer.Verify(ctx, token)
	require.True(t, apperr.Is(err, apperr.Unauthenticated), "a revoked session's token is refused: %v", err)
	var entries int64
	require.NoError(t, st.DB.Model(&models.AuditEntry{}).Where("action = ? AND target_id = ?", artifact.AuditSessionRevoke, live.ID).Count(&entries).Error)
	require.Equal(t, int64(1), entries)
	list, err = m.LiveSessions(ctx, tn.Workspace.ID)
	require.NoError(t, err)
	require.Empty(t, list)

	// A preview is on no task: its revocation's audit row names its binding.
	b := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b-" + models.NewID()[:8], BindingKind: "postgres",
		AllowedOperations: models.JSON(`{}`), Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.DB.Create(&b).Error)
	_, preview, err := issuer.MintPreview(ctx, session.PreviewInput{WorkspaceID: tn.Workspace.ID, BindingID: b.ID, UserID: tn.Admin.ID})
	require.NoError(t, err)
	require.NoError(t, m.RevokeSession(ctx, tn.Workspace.ID, "user:"+tn.Admin.ID, preview.SessionID))
	var entry models.AuditEntry
	require.NoError(t, st.DB.Where("action = ? AND target_id = ?", artifact.AuditSessionRevoke, preview.SessionID).Take(&entry).Error)
	var detail map[string]any
	require.NoError(t, json.Unmarshal(entry.Detail, &detail))
	require.Equal(t, map[string]any{"kind": models.SessionPreview, "binding_id": b.ID, "already_revoked": false}, detail)
}
