package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/models"
)

func TestATaskPageFlagsAWriteWhoseOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	in := models.WriteIntent{ID: models.NewID(), TaskID: f.TaskID, StepID: f.StepID, Name: "set_status",
		Payload: models.MustJSON(map[string]any{"verb": "write", "op": "set_status", "row": map[string]any{"id": 2}})}
	step := f.StepID
	require.NoError(t, c.P.Store.DB.Create(&models.FeedEvent{TaskID: f.TaskID, StepID: &step, Type: models.FeedAgentActionUnknown,
		Name: in.Name, Payload: intent.UnknownPayload(in, intent.ReasonOwnerGone), Actor: "system"}).Error)

	p := cl.get("/tasks/" + f.TaskID)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="badge warn">agent_action_unknown</span>`)
	require.Contains(t, p.Body, "check the data source")
	require.Contains(t, p.Body, "&#34;intended&#34;")
}
