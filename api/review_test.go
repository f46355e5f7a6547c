package api_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/models"
)

// reviewer makes a reviewer user of the fixture's workspace and returns
// their id and host token.
func (f *runtimeFixture) reviewer(t *testing.T, name string) (string, string) {
	t.Helper()
	u := models.User{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, Email: name + "-" + models.NewID()[:8] + "@example.test",
		Name: name, Role: models.RoleReviewer, PasswordHash: "x"}
	require.NoError(t, f.db().Create(&u).Error)
	_, token, err := auth.IssueToken(context.Background(), f.db(), f.tenant.Workspace.ID, models.ScopeHost, "host "+name, &u.ID, nil)
	require.NoError(t, err)
	return u.ID, token
}

// next calls POST /api/review/next and returns the claimed task id ("" for
// nothing to review).
func (f *runtimeFixture) next(t *testing.T, token string) string {
	t.Helper()
	r := f.api.call(t, "POST", "/api/review/next", token, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	task, _ := r.Body["task"].(map[string]any)
	if task == nil {
		require.Equal(t, "nothing to review", r.Body["message"])
		return ""
	}
	return task["task_id"].(string)
}

func (f *runtimeFixture) taskRow(t *testing.T, id string) models.Task {
	t.Helper()
	var task models.Task
	require.NoError(t, f.db().Where("id = ?", id).Take(&task).Error)
	return task
}

func TestReviewNextUnderConcurrency(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	parked := map[string]bool{f.taskID: true}
	for len(parked) < 10 {
		id, _, _ := f.parkedStep(t)
		parked[id] = true
	}
	// A running task and a resolved await are not in the queue.
	done, _, doneAwait := f.parkedStep(t)
	require.NoError(t, f.db().Model(&models.TaskAwait{}).Where("id = ?", doneAwait).Update("status", models.AwaitResolved).Error)
	tokens := make([]string, 20)
	for i := range tokens {
		_, tokens[i] = f.reviewer(t, fmt.Sprintf("r%d", i))
	}

	got := make([]string, len(tokens))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, tok := range tokens {
		wg.Go(func() {
			<-start
			got[i] = f.next(t, tok)
		})
	}
	close(start)
	wg.Wait()

	handed := map[string]int{}
	empty := 0
	for _, id := range got {
		if id == "" {
			empty++
			continue
		}
		handed[id]++
	}
	require.Equal(t, 10, empty, "ten reviewers are told there is nothing to review")
	require.Len(t, handed, 10, "ten distinct tasks are handed out")
	for id, n := range handed {
		require.Equal(t, 1, n, "task %s handed out twice", id)
		require.True(t, parked[id], "task %s was not parked", id)
		require.NotEqual(t, done, id)
	}
}

func TestReviewNextOrderAssignmentAbortAndExpiry(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	aliceID, alice := f.reviewer(t, "alice")
	_, bob := f.reviewer(t, "bob")
	db := f.db()
	// Three more parked tasks: old and low, new and high, newer and high.
	base := time.Now().Add(-time.Hour)
	low, _, _ := f.parkedStep(t)
	high, _, _ := f.parkedStep(t)
	higher, _, _ := f.parkedStep(t)
	for id, v := range map[string][2]any{
		f.taskID: {0.0, base.Add(-time.Minute)}, low: {1.0, base}, high: {50.0, base.Add(2 * time.Minute)}, higher: {50.0, base.Add(3 * time.Minute)},
	} {
		require.NoError(t, db.Model(&models.Task{}).Where("id = ?", id).Updates(map[string]any{"priority": v[0], "created_at": v[1]}).Error)
	}
	// Bob asks again while holding claims: the claim limit
	// (TestReviewPoolsAndTheClaimLimitOverHTTP) is not what this test is about.
	require.NoError(t, db.Model(&models.Workspace{}).Where("id = ?", f.tenant.Workspace.ID).Update("review_claim_limit", 10).Error)
	// The oldest, lowest one is assigned to alice: it comes first for her.
	require.NoError(t, db.Model(&models.Task{}).Where("id = ?", f.taskID).Update("assigned_to", aliceID).Error)

	require.Equal(t, f.taskID, f.next(t, alice))
	claimed := f.taskRow(t, f.taskID)
	require.Equal(t, aliceID, *claimed.ClaimedBy)
	require.Equal(t, aliceID, *claimed.AssignedTo)
	require.WithinDuration(t, time.Now().Add(20*time.Minute), *claimed.ClaimExpiresAt, time.Minute)

	// Then by priority, higher first, the older of equals first.
	require.Equal(t, high, f.next(t, bob))
	require.Equal(t, higher, f.next(t, bob))
	require.Equal(t, low, f.next(t, bob))
	require.Equal(t, "", f.next(t, bob))

	// Only the holder may put a task back; then it is free for anyone.
	r := f.api.call(t, "POST", "/api/review/tasks/"+f.taskID+"/abort", bob, nil)
	require.Equal(t, 409, r.Status, string(r.Raw))
	r = f.api.call(t, "POST", "/api/review/tasks/"+models.NewID()+"/abort", alice, nil)
	require.Equal(t, 404, r.Status, string(r.Raw))
	r = f.api.call(t, "POST", "/api/review/tasks/"+f.taskID+"/abort", alice, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	aborted := f.taskRow(t, f.taskID)
	require.Nil(t, aborted.ClaimedBy)
	require.Nil(t, aborted.AssignedTo)
	require.Equal(t, f.taskID, f.next(t, bob))

	// An expired claim is free again.
	require.NoError(t, db.Model(&models.Task{}).Where("id = ?", high).Update("claim_expires_at", time.Now().Add(-time.Second)).Error)
	require.Equal(t, high, f.next(t, alice))

	// Only a host token reaches the queue.
	r = f.api.call(t, "POST", "/api/review/next", f.tenant.AdminToken, nil)
	require.Equal(t, 401, r.Status, string(r.Raw))
}

func TestResolvingActionReleasesTheClaim(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	generousRate(f.api)
	_, alice := f.reviewer(t, "alice")
	require.Equal(t, f.taskID, f.next(t, alice))
	require.NotNil(t, f.taskRow(t, f.taskID).ClaimedBy)

	f.token = f.mintAs(t, alice, f.stepID, 201).Body["session_token"].(string)
	r := f.verb(t, "action", map[string]any{"op": "approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "ok"}}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	task := f.taskRow(t, f.taskID)
	require.Nil(t, task.ClaimedBy)
	require.Nil(t, task.ClaimExpiresAt)
}

func TestTaskFeedMergesTheLiveDescriptor(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	db := f.db()
	step := f.stepID
	snapshot := models.MustJSON(map[string]any{"default_fullscreen": false, "await_pending": true, "bundle_version": 99,
		"extracted_data": map[string]any{"vendor": "ACME"}})
	require.NoError(t, db.Create(&models.FeedEvent{TaskID: f.taskID, StepID: &step, Type: models.FeedArtifact, Name: "Review",
		Payload: snapshot, CreatedAt: time.Now()}).Error)
	require.NoError(t, db.Model(&models.ConfiguredTool{}).Where("id = ?", f.toolID).Update("default_fullscreen", true).Error)

	r := f.api.call(t, "GET", "/api/tasks/"+f.taskID+"/feed", f.tenant.HostToken, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	events := r.Body["events"].([]any)
	require.Len(t, events, 1)
	p := events[0].(map[string]any)["payload"].(map[string]any)
	require.Equal(t, true, p["default_fullscreen"], "the live value wins")
	require.EqualValues(t, 1, p["bundle_version"])
	require.Equal(t, f.awaitID, p["await_id"])
	require.Equal(t, map[string]any{"vendor": "ACME"}, p["extracted_data"], "the snapshot's own fields stay")
	require.NotContains(t, p, "session_token")

	r = f.api.call(t, "GET", "/api/tasks/"+models.NewID()+"/feed", f.tenant.HostToken, nil)
	require.Equal(t, 404, r.Status)
	r = f.api.call(t, "GET", "/api/tasks/"+f.taskID+"/feed", f.tenant.AgentToken, nil)
	require.Equal(t, 401, r.Status)
}

// mintAs mints a session on step with a reviewer's host token and requires
// the status.
func (f *runtimeFixture) mintAs(t *testing.T, token, stepID string, status int) response {
	t.Helper()
	r := f.api.call(t, "POST", "/api/app-tools/sessions", token, map[string]string{"step_id": stepID})
	require.Equal(t, status, r.Status, string(r.Raw))
	return r
}

// TestClaimHoldsTheTaskOnTheAPI is issue 23's MEDIUM 6: reviewer 2's host
// token minted a session on a task reviewer 1 held (201) and approved it
// (200), and a third mint could end the holder's session. While the claim
// is live only its holder mints or acts; a session minted before the claim
// by someone else is refused too. After an abort or the claim's end,
// anyone may again.
func TestClaimHoldsTheTaskOnTheAPI(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	generousRate(f.api)
	_, alice := f.reviewer(t, "alice")
	_, bob := f.reviewer(t, "bob")
	note := map[string]any{"op": "note_only", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "n"}}}}
	approve := map[string]any{"op": "approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "ok"}}}}
	early := f.token // the admin's session, minted before anyone claimed the task
	require.Equal(t, f.taskID, f.next(t, alice))
	claim := f.taskRow(t, f.taskID)
	var aliceRow models.User
	require.NoError(t, f.db().Where("id = ?", *claim.ClaimedBy).Take(&aliceRow).Error)

	// Bob's mints are refused, naming the claim, and end nobody's session.
	held := f.mintAs(t, alice, f.stepID, 201).Body["session_token"].(string)
	for range 3 {
		r := f.mintAs(t, bob, f.stepID, 409)
		require.Contains(t, r.Body["error"], aliceRow.Email)
		require.Contains(t, r.Body["error"], claim.ClaimExpiresAt.UTC().Format(time.RFC3339))
	}
	f.mintAs(t, f.tenant.HostToken, f.stepID, 409)
	var live int64
	require.NoError(t, f.db().Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NULL", f.taskID).Count(&live).Error)
	require.EqualValues(t, 2, live, "the early session and alice's")

	// The session minted before the claim can no longer act, nor approve.
	f.token = early
	r := f.verb(t, "action", approve)
	require.Equal(t, 409, r.Status, string(r.Raw))
	require.Contains(t, r.Body["error"], aliceRow.Email)
	r = f.verb(t, "action", note)
	require.Equal(t, 409, r.Status, string(r.Raw))
	var decisions int64
	require.NoError(t, f.source.DB.Table("decisions").Count(&decisions).Error)
	require.Zero(t, decisions, "a refused action writes nothing")
	var aw models.TaskAwait
	require.NoError(t, f.db().Where("id = ?", f.awaitID).Take(&aw).Error)
	require.Equal(t, models.AwaitPending, aw.Status)

	// The holder acts.
	f.token = held
	r = f.verb(t, "action", note)
	require.Equal(t, 200, r.Status, string(r.Raw))

	// Put back, the task is anyone's: bob mints; claimed by bob, then past
	// its time, alice mints again and the early session acts.
	r = f.api.call(t, "POST", "/api/review/tasks/"+f.taskID+"/abort", alice, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	f.mintAs(t, bob, f.stepID, 201)
	require.Equal(t, f.taskID, f.next(t, bob))
	f.mintAs(t, alice, f.stepID, 409)
	require.NoError(t, f.db().Model(&models.Task{}).Where("id = ?", f.taskID).Update("claim_expires_at", time.Now().Add(-time.Second)).Error)
	f.mintAs(t, alice, f.stepID, 201)
	f.token = f.mintAs(t, f.tenant.HostToken, f.stepID, 201).Body["session_token"].(string)
	r = f.verb(t, "action", approve)
	require.Equal(t, 200, r.Status, string(r.Raw))
}
