package jobs_test

import (
	"encoding/json"
	"testing"

	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// TestProducerJobWireFormat: a ProducerJob's JSON is byte for byte what
// toolrun.ProducerJob wrote before it moved here, since an outbox row
// written before a deploy is read by a worker after it; and such a row
// still decodes whole.
func TestProducerJobWireFormat(t *testing.T) {
	t.Parallel()
	j := jobs.ProducerJob{WorkspaceID: "w-1", TaskID: "t-1", AgentID: "a-1", StepID: "s-1", ProducerToolID: "p-1",
		Params: json.RawMessage(`{"report_id":7}`)}
	const want = `{"workspace_id":"w-1","task_id":"t-1","agent_id":"a-1","step_id":"s-1","producer_tool_id":"p-1","params":{"report_id":7}}`
	got, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("encoding/json:\n got %s\nwant %s", got, want)
	}
	// outbox.Add stores the payload through models.MustJSON.
	if stored := string(models.MustJSON(j)); stored != want {
		t.Errorf("as an outbox payload:\n got %s\nwant %s", stored, want)
	}
	const noParams = `{"workspace_id":"w-1","task_id":"t-1","agent_id":"a-1","step_id":"s-1","producer_tool_id":"p-1","params":null}`
	j.Params = nil
	if got, _ := json.Marshal(j); string(got) != noParams {
		t.Errorf("without params:\n got %s\nwant %s", got, noParams)
	}

	var back jobs.ProducerJob
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if back.WorkspaceID != "w-1" || back.TaskID != "t-1" || back.AgentID != "a-1" || back.StepID != "s-1" ||
		back.ProducerToolID != "p-1" || string(back.Params) != `{"report_id":7}` {
		t.Errorf("a stored row decodes to %+v", back)
	}
}
