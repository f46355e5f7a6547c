package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/models"
)

// TestTheApprovalsRequestIDReachesTheWebhook follows one request id from the
// bundle's approval through the outbox row, the resume job and the webhook
// job it enqueues, to the X-Request-Id of the delivery, so one id finds the
// whole story in the api's, the worker's and the receiver's logs.
func TestTheApprovalsRequestIDReachesTheWebhook(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	startWorker(t, s.P)
	hook := newReceiver(t)
	st := setUp(t, s, hook)

	id := "e2e-approval-" + models.NewID()[:8]
	body, err := json.Marshal(map[string]any{"op": "approve_invoice", "payload": approvePayload})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, s.URL+"/api/app-runtime/action", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+st.sessionToken)
	req.Header.Set(requestid.Header, id)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, id, res.Header.Get(requestid.Header), "the API answers under the caller's id")

	var row models.Outbox
	require.NoError(t, s.Store.DB.Where("kind = ?", outbox.KindResumeEvent).Take(&row).Error)
	require.NotNil(t, row.RequestID)
	require.Equal(t, id, *row.RequestID, "the outbox row keeps the request's id")

	got := hook.waitOne(t)
	require.Len(t, got, 1)
	require.Equal(t, id, got[0].Header.Get(requestid.Header), "the webhook job, enqueued by the resume job, posts with the same id")
}
