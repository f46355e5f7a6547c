package api_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// multipartFile is a form with one part named field holding data.
func multipartFile(t *testing.T, field, name string, data []byte) (body []byte, contentType string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormFile(field, name)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

// TestAgentTaskFileUpload: an agent uploads a file to its own task; the
// reply has its sniffed type, pages and a managed URL; other agents' tasks,
// other bodies and oversized files are refused and store nothing.
func TestAgentTaskFileUpload(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, a.Store.DB.Create(&task).Error)
	path := "/api/agent/tasks/" + task.ID + "/files"

	body, ct := multipartFile(t, "file", "../invoice.bin", documenttest.PDF("one", "two"))
	r := a.call(t, "POST", path, tn.AgentToken, body, "Content-Type", ct)
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, "application/pdf", r.Body["content_type"], "typed by its bytes")
	require.EqualValues(t, 2, r.Body["pages"])
	require.NotContains(t, r.Body["name"], "/")
	f, err := a.P.Files.VerifyURLForTask(t.Context(), r.Body["url"].(string), task.ID)
	require.NoError(t, err)
	require.Equal(t, r.Body["file_id"], f.ID)

	other := testkit.NewTenant(t, a.Store.DB)
	r = a.call(t, "POST", path, other.AgentToken, body, "Content-Type", ct)
	require.Equal(t, 404, r.Status, "another agent's task: %s", r.Raw)
	r = a.call(t, "POST", path, "", body, "Content-Type", ct)
	require.Equal(t, 401, r.Status)

	r = a.call(t, "POST", path, tn.AgentToken, []byte(`{"file":"x"}`))
	require.Equal(t, 415, r.Status, string(r.Raw))
	noFile, ct2 := multipartFile(t, "other", "a.pdf", documenttest.PDF("x"))
	r = a.call(t, "POST", path, tn.AgentToken, noFile, "Content-Type", ct2)
	require.Equal(t, 400, r.Status, string(r.Raw))

	// One byte over the cap, streamed: 413, and nothing stored.
	big := io.MultiReader(bytes.NewReader([]byte("%PDF-1.7\n")), io.LimitReader(zeros{}, files.MaxFileBytes))
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, _ := mw.CreateFormFile("file", "big.pdf")
		_, err := io.Copy(w, big)
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", a.URL+path, pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+tn.AgentToken)
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
		require.Equal(t, 413, res.StatusCode)
	}
	var n int64
	require.NoError(t, a.Store.DB.Model(&models.File{}).Where("task_id = ?", task.ID).Count(&n).Error)
	require.EqualValues(t, 1, n, "only the first upload was stored")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
