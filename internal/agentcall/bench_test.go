package agentcall_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentcall"
)

// BenchmarkToolCall compares a tool call run on the lookup queue (enqueue,
// a worker's handler, pub/sub back; asynq polling an idle queue every
// 50 ms) with the same call dispatched in the API's process, against one
// loopback endpoint. It reports the ratio of the two in the same run.
func BenchmarkToolCall(b *testing.B) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.Copy(w, r.Body)
	}
	measure := func(b *testing.B, f fixture) time.Duration {
		ctx := context.Background()
		in := agentcall.CallInput{Name: "echo", Input: json.RawMessage(`{"a": 1}`)}
		start := time.Now()
		for range b.N {
			_, err := f.svc.Call(ctx, f.caller, f.taskID, in)
			require.NoError(b, err)
		}
		return time.Since(start) / time.Duration(b.N)
	}
	var queued, direct time.Duration
	b.Run("lookup-queue", func(b *testing.B) {
		f := newFixtureTB(b, 20*time.Second, echo, true)
		f.startLookupWorker(b)
		b.ResetTimer()
		queued = measure(b, f)
	})
	b.Run("in-process", func(b *testing.B) {
		f := newFixtureTB(b, 20*time.Second, echo, false)
		b.ResetTimer()
		direct = measure(b, f)
	})
	if direct > 0 {
		b.Logf("per call: lookup queue %s, in process %s, ratio %.1f×", queued, direct, float64(queued)/float64(direct))
	}
}
