package citation_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/citation"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func newTask(t *testing.T, st *store.Store) models.Task {
	t.Helper()
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: "invoice", Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	return task
}

func TestCitationsAreStoredListedAndReadByIDOnBothDialects(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		task, other := newTask(t, st), newTask(t, st)
		out := json.RawMessage(`{"data":{"total":"42.00"},"citations":[
			{"page":2,"quote":"Total due 42.00","box":{"x":0.1,"y":0.5,"w":0.3,"h":0.05}},
			{"file":"terms.pdf","page":1,"quote":"Net 30"}]}`)
		in, err := citation.Parse(out, "invoice.pdf")
		require.NoError(t, err)
		require.Equal(t, "invoice.pdf", in[0].File, "a citation without a file cites the document read")

		var saved []citation.Citation
		require.NoError(t, st.DB.Transaction(func(tx *gorm.DB) error {
			saved, err = citation.Save(ctx, tx, task.ID, "run-1", in)
			return err
		}))
		require.Len(t, saved, 2)
		require.NotZero(t, saved[0].ID)
		require.Greater(t, saved[1].ID, saved[0].ID)

		again, err := citation.Save(ctx, st.DB, task.ID, "run-1", in)
		require.NoError(t, err)
		require.Equal(t, []int64{saved[0].ID, saved[1].ID}, []int64{again[0].ID, again[1].ID}, "a run saved twice keeps its first ids")

		withIDs, err := citation.Attach(out, saved)
		require.NoError(t, err)
		var res struct {
			Data      map[string]string `json:"data"`
			Citations []map[string]any  `json:"citations"`
		}
		require.NoError(t, json.Unmarshal(withIDs, &res))
		require.Equal(t, "42.00", res.Data["total"])
		require.Equal(t, float64(saved[0].ID), res.Citations[0]["id"])
		require.Equal(t, map[string]any{"x": 0.1, "y": 0.5, "w": 0.3, "h": 0.05}, res.Citations[0]["box"])
		require.NotContains(t, res.Citations[1], "box")

		all, err := citation.List(ctx, st.DB, task.ID, "")
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, "Total due 42.00", all[0].Quote)
		require.Equal(t, &citation.Box{X: 0.1, Y: 0.5, W: 0.3, H: 0.05}, all[0].Box)
		require.Nil(t, all[1].Box)
		terms, err := citation.List(ctx, st.DB, task.ID, "terms.pdf")
		require.NoError(t, err)
		require.Len(t, terms, 1)
		require.Equal(t, 1, terms[0].Page)
		none, err := citation.List(ctx, st.DB, other.ID, "")
		require.NoError(t, err)
		require.Empty(t, none, "another task sees none of them")

		got, err := citation.ByIDs(ctx, st.DB, task.ID, []int64{saved[1].ID, saved[0].ID})
		require.NoError(t, err)
		require.Equal(t, "terms.pdf", got[0].FileName)
		_, err = citation.ByIDs(ctx, st.DB, other.ID, []int64{saved[0].ID})
		require.True(t, apperr.Is(err, apperr.NotFound), "another task's citation is unknown to it: %v", err)
		_, err = citation.ByIDs(ctx, st.DB, task.ID, []int64{saved[0].ID, 999999})
		require.True(t, apperr.Is(err, apperr.NotFound))
		require.Contains(t, err.Error(), "999999")
	})
}

func TestMalformedCitationsAreRefusedNamingThem(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ output, want string }{
		"not an array":     {`{"citations":{"page":1}}`, "citations is an array"},
		"no page":          {`{"citations":[{"quote":"a"}]}`, "citations[0]: page is a page number from 1"},
		"no quote nor box": {`{"citations":[{"page":1},{"page":2,"quote":" "}]}`, "citations[0]: quote is required"},
		"box off the page": {`{"citations":[{"page":1,"quote":"a","box":{"x":0.9,"y":0,"w":0.5,"h":0.1}}]}`, "lies on the page"},
		"box not fraction": {`{"citations":[{"page":1,"quote":"a","box":{"x":2,"y":0,"w":0.5,"h":0.1}}]}`, "fractions"},
		"no file":          {`{"citations":[{"page":1,"quote":"a"}]}`, "file names a file"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			def := "invoice.pdf"
			if name == "no file" {
				def = ""
			}
			_, err := citation.Parse(json.RawMessage(tc.output), def)
			require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	none, err := citation.Parse(json.RawMessage(`[1,2]`), "x")
	require.NoError(t, err)
	require.Nil(t, none, "an output that is not an object carries no citations")
}
