package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// TestRequireSession mounts the middleware on a probe route that echoes the
// claims it was handed; the runtime verbs mount it the same way.
func TestRequireSession(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	rd := testkit.Redis(t)
	log := logging.New(io.Discard, slog.LevelError)
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	sessions, err := session.NewIssuer(session.IssuerOptions{
		Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix,
		Keys: cfg.SessionKeys, Issuer: cfg.SessionIssuer, Log: log,
	})
	require.NoError(t, err)
	t.Cleanup(sessions.Close)
	s := &server{Services: Services{Log: log, Sessions: sessions}}
	app := web.NewApp(web.Options{Name: "api", Logger: log})
	app.Get("/probe", s.requireSession(), func(c *fiber.Ctx) error { return c.JSON(sessionOf(c)) })

	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&step).Error)
	ctx := context.Background()
	mint := func() (string, session.Claims) {
		token, claims, err := sessions.Mint(ctx, session.MintInput{
			WorkspaceID: tn.Workspace.ID, TaskID: task.ID, AgentID: tn.Agent.ID, StepID: step.ID,
			ConfiguredToolID: models.NewID(), BindingID: models.NewID(), UserID: tn.Admin.ID,
		})
		require.NoError(t, err)
		return token, claims
	}
	good, goodClaims := mint()
	revoked, revokedClaims := mint()
	require.NoError(t, sessions.Revoke(ctx, revokedClaims.SessionID))

	get := func(t *testing.T, authorization string) (int, map[string]any) {
		req := httptest.NewRequest("GET", "/probe", nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		res, err := app.Test(req, -1)
		require.NoError(t, err)
		defer res.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		return res.StatusCode, body
	}

	t.Run("a valid token hands the handler its claims", func(t *testing.T) {
		status, body := get(t, "Bearer "+good)
		require.Equal(t, 200, status)
		want, err := json.Marshal(goodClaims)
		require.NoError(t, err)
		var wantBody map[string]any
		require.NoError(t, json.Unmarshal(want, &wantBody))
		require.Equal(t, wantBody, body)
	})
	for _, tc := range []struct{ name, header, message string }{
		{"no Authorization header", "", "session token required"},
		{"not a bearer", "Basic " + good, "session token required"},
		{"empty bearer", "Bearer ", "session token required"},
		{"garbage", "Bearer xyz", "session token malformed"},
		{"a host API token", "Bearer " + tn.HostToken, "session token malformed"},
		{"revoked", "Bearer " + revoked, "session token revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, tc.header)
			require.Equal(t, 401, status)
			require.Equal(t, tc.message, body["error"])
		})
	}
}
