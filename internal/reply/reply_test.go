package reply_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestPostSettlesTheTask: a final reply completes a running task; a partial
// one leaves it running; any reply leaves a parked task parked (the await
// decides); a task that is over takes no reply and nothing of it is kept.
func TestPostSettlesTheTask(t *testing.T) {
	t.Parallel()
	const (
		final   = `{"final": true, "blocks": [{"type": "text", "text": "Done."}]}`
		partial = `{"final": false, "blocks": [{"type": "text", "text": "Working on it."}]}`
	)
	for _, tc := range []struct {
		name, status, body string
		want               string // the task's status after; "" for a 409
	}{
		{"final on running", models.TaskRunning, final, models.TaskCompleted},
		{"partial on running", models.TaskRunning, partial, models.TaskRunning},
		{"final on parked", models.TaskWaitingForInput, final, models.TaskWaitingForInput},
		{"partial on parked", models.TaskWaitingForInput, partial, models.TaskWaitingForInput},
		{"final on completed", models.TaskCompleted, final, ""},
		{"partial on completed", models.TaskCompleted, partial, ""},
		{"final on failed", models.TaskFailed, final, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, svc, tn := newService(t, reply.Options{})
			tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: tc.status}
			require.NoError(t, st.DB.Create(&tk).Error)
			caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}

			v, err := svc.Post(context.Background(), caller, tk.ID, []byte(tc.body))
			var after models.Task
			require.NoError(t, st.DB.Where("id = ?", tk.ID).Take(&after).Error)
			var replies, events int64
			require.NoError(t, st.DB.Model(&models.TaskReply{}).Where("task_id = ?", tk.ID).Count(&replies).Error)
			require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ?", tk.ID).Count(&events).Error)
			if tc.want == "" {
				var ae *apperr.Error
				require.True(t, errors.As(err, &ae), "%v", err)
				require.Equal(t, apperr.Conflict, ae.Code)
				require.Equal(t, tc.status, after.Status)
				require.Zero(t, replies+events, "a refused reply keeps nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, v.TaskStatus)
			require.Equal(t, tc.want, after.Status)
			require.EqualValues(t, 1, replies)
			require.EqualValues(t, 1, events)
		})
	}
}

// TestPostOnAnotherAgentsTask: another agent's task (even in the same
// workspace) is not found, and a refused reply leaves its status alone.
func TestPostOnAnotherAgentsTask(t *testing.T) {
	t.Parallel()
	st, svc, tn := newService(t, reply.Options{})
	other := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "other"}
	require.NoError(t, st.DB.Create(&other).Error)
	tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: other.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&tk).Error)
	caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
	_, err := svc.Post(context.Background(), caller, tk.ID, []byte(`{"final": true, "blocks": [{"type": "text", "text": "x"}]}`))
	var ae *apperr.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, apperr.NotFound, ae.Code)
	var after models.Task
	require.NoError(t, st.DB.Where("id = ?", tk.ID).Take(&after).Error)
	require.Equal(t, models.TaskRunning, after.Status)
}

// TestSignedAssetURLs: a host's replies carry a signed URL per asset;
// the URL serves the asset until it expires, and any change to it (its
// asset, task, expiry or signature) is refused; an asset no reply of the
// task shows is not served; without SECRETS_KEY there are no URLs.
func TestSignedAssetURLs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st, svc, tn := newService(t, reply.Options{SecretsKey: []byte(strings.Repeat("k", 32)),
		PublicAPIURL: "https://api.example.com/base", Now: func() time.Time { return now }})
	ctx := context.Background()
	caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
	newTask := func() string {
		tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
		require.NoError(t, st.DB.Create(&tk).Error)
		return tk.ID
	}
	taskID, otherTask := newTask(), newTask()
	html := []byte("<!doctype html><p>app</p>")
	shown, err := svc.UploadAsset(ctx, caller, "text/html", html)
	require.NoError(t, err)
	hidden, err := svc.UploadAsset(ctx, caller, "text/html", html)
	require.NoError(t, err)
	_, err = svc.Post(ctx, caller, taskID, []byte(`{"final": false, "blocks": [{"type": "text", "text": "thinking"}]}`))
	require.NoError(t, err)
	_, err = svc.Post(ctx, caller, taskID, []byte(`{"final": true, "blocks": [{"type": "app", "asset_id": "`+shown.ID+`", "title": "T", "fallback": "F"}]}`))
	require.NoError(t, err)

	list, err := svc.HostReplies(ctx, tn.Workspace.ID, taskID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Nil(t, list[0].AssetURLs, "a reply without app blocks has no URLs")
	require.Len(t, list[1].AssetURLs, 1)
	require.Equal(t, now.Add(reply.AssetURLLifetime), *list[1].AssetURLsExpireAt)
	raw := list[1].AssetURLs[shown.ID]
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/base"+reply.AssetsPath+"/"+shown.ID, u.Scheme+"://"+u.Host+u.Path)
	q := u.Query()
	ticket := reply.AssetTicket{AssetID: shown.ID, TaskID: q.Get("task"), Exp: q.Get("exp"), Sig: q.Get("sig")}
	require.Equal(t, taskID, ticket.TaskID)

	data, err := svc.ServeAsset(ctx, ticket)
	require.NoError(t, err)
	require.Equal(t, html, data)

	codeOf := func(err error) apperr.Code {
		var ae *apperr.Error
		require.True(t, errors.As(err, &ae), "%v", err)
		return ae.Code
	}
	expInt, err := strconv.ParseInt(ticket.Exp, 10, 64)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		change func(*reply.AssetTicket)
		want   apperr.Code
	}{
		"another asset":          {func(t *reply.AssetTicket) { t.AssetID = hidden.ID }, apperr.Forbidden},
		"another task":           {func(t *reply.AssetTicket) { t.TaskID = otherTask }, apperr.Forbidden},
		"a later expiry":         {func(t *reply.AssetTicket) { t.Exp = strconv.FormatInt(expInt+60, 10) }, apperr.Forbidden},
		"a padded expiry":        {func(t *reply.AssetTicket) { t.Exp = "0" + t.Exp }, apperr.Forbidden},
		"a changed signature":    {flipSig, apperr.Forbidden},
		"no signature":           {func(t *reply.AssetTicket) { t.Sig = "" }, apperr.Forbidden},
		"not an asset id":        {func(t *reply.AssetTicket) { t.AssetID = "ast_x" }, apperr.Forbidden},
		"a task id of no format": {func(t *reply.AssetTicket) { t.TaskID = "x" }, apperr.Forbidden},
	} {
		tk := ticket
		tc.change(&tk)
		_, err := svc.ServeAsset(ctx, tk)
		require.Equal(t, tc.want, codeOf(err), name)
	}

	// Expired: refused once its time is up.
	now = now.Add(reply.AssetURLLifetime)
	_, err = svc.ServeAsset(ctx, ticket)
	require.Equal(t, apperr.Forbidden, codeOf(err))
	require.Contains(t, err.Error(), "expired")

	// Without SECRETS_KEY: no URLs, and the route is 501.
	bare, err := reply.NewService(reply.Options{Store: st})
	require.NoError(t, err)
	list, err = bare.HostReplies(ctx, tn.Workspace.ID, taskID)
	require.NoError(t, err)
	require.Nil(t, list[1].AssetURLs)
	_, err = bare.ServeAsset(ctx, ticket)
	require.Equal(t, apperr.NotImplemented, codeOf(err))
}

// flipSig changes the first character of a ticket's signature.
func flipSig(t *reply.AssetTicket) {
	b := []byte(t.Sig)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	t.Sig = string(b)
}

// newService returns a Service on o with a test transaction and a blob
// directory of the test's own, and a tenant in the transaction.
func newService(t *testing.T, o reply.Options) (*store.Store, *reply.Service, testkit.Tenant) {
	t.Helper()
	o.Store = testkit.Tx(t)
	blobs, err := storage.NewDir(t.TempDir())
	require.NoError(t, err)
	o.Blobs = blobs
	svc, err := reply.NewService(o)
	require.NoError(t, err)
	return o.Store, svc, testkit.NewTenant(t, o.Store.DB)
}
