package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// htmlOf is an HTML page of exactly n bytes.
func htmlOf(n int) string {
	head := "<!doctype html><html><body>"
	return head + strings.Repeat("x", n-len(head))
}

func uploadAsset(t *testing.T, a *testAPI, token, contentType, body string) response {
	t.Helper()
	return a.call(t, "POST", "/api/agent/assets", token, body, "Content-Type", contentType)
}

func TestAgentAssetUpload(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)

	r := uploadAsset(t, a, tn.AgentToken, "text/html", htmlOf(appblock.MaxAssetBytes))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	require.True(t, appblock.IsAssetID(id), id)
	require.EqualValues(t, appblock.MaxAssetBytes, r.Body["size"])
	var row models.AgentAsset
	require.NoError(t, a.Store.DB.Where("id = ?", id).Take(&row).Error)
	require.Equal(t, tn.Agent.ID, row.AgentID)

	r = uploadAsset(t, a, tn.AgentToken, "text/html", htmlOf(appblock.MaxAssetBytes+1))
	require.Equal(t, 413, r.Status, "%s", r.Raw)
	r = uploadAsset(t, a, tn.AgentToken, "application/javascript", htmlOf(100))
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	r = uploadAsset(t, a, tn.AgentToken, "text/html", "just words")
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	r = uploadAsset(t, a, tn.HostToken, "text/html", htmlOf(100))
	require.Contains(t, []int{401, 403}, r.Status)
	var n int64
	require.NoError(t, a.Store.DB.Model(&models.AgentAsset{}).Count(&n).Error)
	require.EqualValues(t, 1, n, "refused uploads store nothing")
}

func TestAgentReplies(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	other := testkit.NewTenant(t, a.Store.DB)
	ours := admID(t, uploadAsset(t, a, tn.AgentToken, "text/html", htmlOf(200)))
	theirs := admID(t, uploadAsset(t, a, other.AgentToken, "text/html", htmlOf(200)))
	taskID := newTask(t, a, tn)
	path := "/api/agent/tasks/" + taskID + "/replies"
	app := func(asset string) map[string]any {
		return map[string]any{"type": "app", "asset_id": asset, "title": "Get Time App", "fallback": "Open on the web to run it.",
			"tool_input":  map[string]any{"timezone": "Asia/Ho_Chi_Minh"},
			"tool_result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "14:32 +07:00"}}}}
	}

	r := a.call(t, "POST", path, tn.AgentToken, map[string]any{"final": true, "blocks": []any{
		map[string]any{"type": "text", "text": "Here it is."}, app(ours)}})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.Len(t, r.Body["blocks"], 2)
	require.Equal(t, models.TaskCompleted, r.Body["task_status"], "a final reply completes the running task")
	replyID := admID(t, r)

	// Refusals: one invalid_blocks with a reason per block, nothing stored.
	for name, body := range map[string]map[string]any{
		"partial":         {"final": false, "blocks": []any{app(ours)}},
		"another's asset": {"final": true, "blocks": []any{app(theirs)}},
		"title too long":  {"final": true, "blocks": []any{map[string]any{"type": "text", "text": "ok"}, func() map[string]any { b := app(ours); b["title"] = strings.Repeat("t", 81); return b }()}},
	} {
		r := a.call(t, "POST", path, tn.AgentToken, body)
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Raw)
		require.Equal(t, "invalid_blocks", r.Body["code"], "%s: %s", name, r.Raw)
		blocks, _ := r.Body["blocks"].([]any)
		require.Len(t, blocks, 1, "%s: %s", name, r.Raw)
	}
	var replies, events int64
	require.NoError(t, a.Store.DB.Model(&models.TaskReply{}).Where("task_id = ?", taskID).Count(&replies).Error)
	require.NoError(t, a.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", taskID, models.FeedReply).Count(&events).Error)
	require.EqualValues(t, 1, replies)
	require.EqualValues(t, 1, events)

	// Another agent cannot reply on the task.
	r = a.call(t, "POST", path, other.AgentToken, map[string]any{"final": true, "blocks": []any{map[string]any{"type": "text", "text": "x"}}})
	require.Equal(t, 404, r.Status, "%s", r.Raw)

	// The completed task takes no more replies; nothing of one is kept.
	r = a.call(t, "POST", path, tn.AgentToken, map[string]any{"final": false, "blocks": []any{map[string]any{"type": "text", "text": "late"}}})
	require.Equal(t, 409, r.Status, "%s", r.Raw)

	// A host of the workspace reads the replies; another workspace's host cannot.
	r = a.call(t, "GET", "/api/tasks/"+taskID+"/replies", tn.HostToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	list, _ := r.Body["replies"].([]any)
	require.Len(t, list, 1, "%s", r.Raw)
	got := list[0].(map[string]any)
	require.Equal(t, replyID, got["id"])
	require.Equal(t, true, got["final"])
	blocks := got["blocks"].([]any)
	require.Len(t, blocks, 2)
	require.Equal(t, ours, blocks[1].(map[string]any)["asset_id"])
	r = a.call(t, "GET", "/api/tasks/"+taskID+"/replies", other.HostToken, nil)
	require.Equal(t, 404, r.Status, "%s", r.Raw)
	r = a.call(t, "GET", "/api/tasks/"+taskID+"/replies", tn.AgentToken, nil)
	require.Contains(t, []int{401, 403}, r.Status, "%s", r.Raw)
}

// TestHostFramesAssetsBySignedURL: a host lists a task's replies and gets
// a signed URL per asset, which serves the asset with no token under its
// own policy, framable only by the ASSET_FRAME_ANCESTORS origins (none by
// default); a changed URL is 403.
func TestHostFramesAssetsBySignedURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ancestors, want string
	}{
		{"default", "", "frame-ancestors 'none'"},
		{"integrators", "https://host.example.com,https://other.example.org", "frame-ancestors https://host.example.com https://other.example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newTestAPI(t, func(c *config.Config) {
				if tc.ancestors != "" {
					c.AssetFrameAncestors = strings.Split(tc.ancestors, ",")
				}
			})
			tn := testkit.NewTenant(t, a.Store.DB)
			page := htmlOf(300)
			asset := admID(t, uploadAsset(t, a, tn.AgentToken, "text/html", page))
			taskID := newTask(t, a, tn)
			r := a.call(t, "POST", "/api/agent/tasks/"+taskID+"/replies", tn.AgentToken, map[string]any{"final": true, "blocks": []any{
				map[string]any{"type": "app", "asset_id": asset, "title": "T", "fallback": "F"}}})
			require.Equal(t, 201, r.Status, "%s", r.Raw)

			r = a.call(t, "GET", "/api/tasks/"+taskID+"/replies", tn.HostToken, nil)
			require.Equal(t, 200, r.Status, "%s", r.Raw)
			got := r.Body["replies"].([]any)[0].(map[string]any)
			require.NotEmpty(t, got["asset_urls_expire_at"])
			raw := got["asset_urls"].(map[string]any)[asset].(string)
			path, ok := strings.CutPrefix(raw, a.URL)
			require.True(t, ok, "the URL is the API's: %s", raw)

			r = a.call(t, "GET", path, "", nil)
			require.Equal(t, 200, r.Status, "%s", r.Raw)
			require.Equal(t, page, string(r.Raw))
			require.Equal(t, appblock.AssetContentType, r.Header.Get("Content-Type"))
			csp := r.Header.Get("Content-Security-Policy")
			require.Contains(t, csp, "connect-src 'none'")
			require.Contains(t, csp, "sandbox allow-scripts")
			require.Contains(t, csp, tc.want)

			r = a.call(t, "GET", strings.Replace(path, "task="+taskID, "task="+models.NewID(), 1), "", nil)
			require.Equal(t, 403, r.Status, "%s", r.Raw)
		})
	}
}
