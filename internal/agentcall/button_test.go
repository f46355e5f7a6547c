package agentcall_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/models"
)

// TestAClickCutByARestartIsAppliedAgain: a click whose statement the
// platform database ends in flight (a restart; here pg_terminate_backend
// while it waits on the call's row) is applied again on a new connection
// and answers the person, rather than failing with the card left claimed
// and their next click refused until the claim lapses. For a button
// without target the cut statement is the click's one transaction; for
// one with a target, the answer after the target ran.
func TestAClickCutByARestartIsAppliedAgain(t *testing.T) {
	t.Parallel()
	for _, button := range []string{"ok", "go"} {
		t.Run(button, func(t *testing.T) {
			t.Parallel()
			started, release := make(chan struct{}, 1), make(chan struct{})
			var f fixture
			f = newFixtureTB(t, 20*time.Second, func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/ask":
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"type": "pending_input", "title": "Go?", "elements": [
						{"type": "button", "id": "ok", "label": "OK", "input": {"answer": "ok"}},
						{"type": "button", "id": "go", "label": "Go", "input": {"answer": "go"},
						 "target": {"type": "url", "url": "` + f.url + `/go", "method": "POST", "body": "${input}"}}]}`))
				case "/go":
					started <- struct{}{}
					<-release
					w.Header().Set("Content-Type", "text/plain")
					_, _ = w.Write([]byte("went"))
				}
			}, false)
			ctx := context.Background()
			_, err := f.svc.CreateDeclaration(ctx, f.caller.WorkspaceID, f.caller.AgentID, "test", []byte(`{"name": "ask", "displayName": "Ask",
				"description": "Asks.", "input": {"type": "object"},
				"target": {"type": "url", "url": "`+f.url+`/ask", "method": "POST", "body": "${input}"}}`))
			require.NoError(t, err)
			parked, err := f.svc.Call(ctx, f.caller, f.taskID, agentcall.CallInput{Name: "ask"})
			require.NoError(t, err)
			require.Equal(t, models.ToolCallPendingInput, parked.Status)

			// The call's row locked elsewhere: the click's update waits on
			// it, in flight, and is ended there. A button without target
			// updates the row first; one with a target once it ran.
			blocker, err := f.st.SQL().BeginTx(ctx, nil)
			require.NoError(t, err)
			defer blocker.Rollback() //nolint:errcheck
			var blockerPID int
			require.NoError(t, blocker.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&blockerPID))
			lock := func() {
				_, err := blocker.ExecContext(ctx, "SELECT 1 FROM tool_calls WHERE id = $1 FOR UPDATE", parked.ID)
				require.NoError(t, err)
			}
			type answer struct {
				view agentcall.CallView
				err  error
			}
			done := make(chan answer, 1)
			who := agentcall.Clicker{WorkspaceID: f.caller.WorkspaceID, UserID: models.NewID(), Actor: "user:ann"}
			if button == "ok" {
				lock()
			}
			go func() {
				v, err := f.svc.Click(ctx, who, f.taskID, parked.ID, button)
				done <- answer{v, err}
			}()
			if button == "go" {
				<-started // claimed; its target runs
				lock()
				close(release)
			}
			var waiting int
			require.Eventually(t, func() bool {
				err := f.st.DB.Raw("SELECT pid FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", blockerPID).Scan(&waiting).Error
				return err == nil && waiting != 0
			}, 10*time.Second, 10*time.Millisecond, "the click's update waits on the row")
			require.NoError(t, f.st.DB.Exec("SELECT pg_terminate_backend(?)", waiting).Error)
			time.Sleep(200 * time.Millisecond) // applied again, it waits on the same lock
			require.NoError(t, blocker.Commit())

			a := <-done
			require.NoError(t, a.err, "the click is applied again on a new connection")
			require.Equal(t, models.ToolCallCompleted, a.view.Status)
			want := map[string]string{"ok": `{"answer":"ok"}`, "go": "went"}[button]
			require.Equal(t, want, a.view.Result.Content)
			var clicks int64
			require.NoError(t, f.st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", f.taskID, models.FeedToolCallClick).Count(&clicks).Error)
			require.EqualValues(t, 1, clicks)
			var aw models.TaskAwait
			require.NoError(t, f.st.DB.Where("task_id = ?", f.taskID).Take(&aw).Error)
			require.Equal(t, models.AwaitResolved, aw.Status)
		})
	}
}
