package intent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

// The records of a batch are one JSON document built by appending: every
// string reads back as itself, whatever it holds, and every payload is
// embedded as the JSON it is.
func TestRecordsAreJSONThatReadsBackAsTheBatch(t *testing.T) {
	t.Parallel()
	odd := []string{"", `quote " and \ backslash`, "line\nbreak\ttab\x01\x1f", "ünïcödé ✓ 𝄞", "</script>&", "bad utf-8 \xff\xfe end"}
	for _, s := range odd {
		payload := models.MustJSON(map[string]any{"row": map[string]any{"v": s}})
		open := []models.WriteIntent{{ID: models.NewID(), Owner: models.NewID(), TaskID: models.NewID(), StepID: models.NewID(),
			Name: s, Actor: "user:" + s, Payload: payload}, {ID: models.NewID(), Name: "second", Payload: models.JSON(`{}`)}}
		var gotOpen []map[string]any
		require.NoError(t, json.Unmarshal(openRecords(nil, open), &gotOpen), "%q", s)
		require.Len(t, gotOpen, 2)
		want := json.RawMessage(models.MustJSON(s)) // encoding/json's reading of s (invalid UTF-8 → U+FFFD)
		var wantS string
		require.NoError(t, json.Unmarshal(want, &wantS))
		require.Equal(t, map[string]any{"id": open[0].ID, "task_id": open[0].TaskID, "step_id": open[0].StepID,
			"name": wantS, "actor": "user:" + wantS, "payload": map[string]any{"row": map[string]any{"v": wantS}}}, gotOpen[0])
		require.Equal(t, "second", gotOpen[1]["name"])
		back, err := readRecords(models.WriteIntentBatch{ID: "b", Intents: string(openRecords(nil, open))})
		require.NoError(t, err)
		require.Equal(t, open[1].ID, back[1].ID)
		require.Equal(t, wantS, back[0].Name, "a sweep reads the records back")

		open[0].BatchID = models.NewID()
		complete := []Completion{{Intent: open[0], Type: s, Payload: payload}, {Intent: open[1], Type: "t", RowsAffected: 7}}
		var gotComplete []map[string]any
		require.NoError(t, json.Unmarshal(completionRecords(nil, complete), &gotComplete), "%q", s)
		require.Equal(t, []map[string]any{
			{"intent_id": open[0].ID, "batch_id": open[0].BatchID, "task_id": open[0].TaskID, "step_id": open[0].StepID, "type": wantS,
				"name": wantS, "actor": "user:" + wantS, "payload": map[string]any{"row": map[string]any{"v": wantS}}},
			{"intent_id": open[1].ID, "batch_id": "", "task_id": "", "step_id": "", "type": "t", "name": "second", "actor": "",
				"payload": map[string]any{"rows_affected": float64(7)}},
		}, gotComplete)
	}
}

func TestWithRowsAffectedAddsTheCountToTheRecord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"verb":"write","row":{"id":2}}`: `{"verb":"write","row":{"id":2},"rows_affected":3}`,
		`{}`:                              `{"rows_affected":3}`,
		` { "verb" : "write" } `:          `{ "verb" : "write" ,"rows_affected":3}`,
	} {
		got := withRowsAffected(models.JSON(in), 3)
		require.JSONEq(t, want, string(got), in)
	}
}
