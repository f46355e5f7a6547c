package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/logging"
)

type otherKey struct{}

// A context's attributes are added to every line logged with it, a later
// With's after an earlier one's, and the contexts derived from it keep them
// and its cancellation.
func TestWithAddsItsAttributesToEveryLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := logging.New(&out, slog.LevelInfo)
	parent, cancel := context.WithCancel(context.Background())
	ctx := logging.With(parent, slog.String(logging.RequestID, "req-1"))
	inner := logging.With(ctx, slog.String("job", "j"), slog.Int("try", 2))
	derived, stop := context.WithCancel(context.WithValue(inner, otherKey{}, "v"))
	defer stop()

	log.InfoContext(derived, "hello")
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line))
	require.Equal(t, "req-1", line[logging.RequestID])
	require.Equal(t, "j", line["job"])
	require.EqualValues(t, 2, line["try"])
	require.Equal(t, "req-1", logging.RequestIDOf(derived))
	require.Equal(t, "v", derived.Value(otherKey{}))

	out.Reset()
	log.InfoContext(ctx, "outer")
	require.NoError(t, json.Unmarshal(out.Bytes(), &line))
	require.NotContains(t, out.String(), `"job"`, "an inner With adds nothing to its parent")
	require.Empty(t, logging.RequestIDOf(context.Background()))

	cancel()
	<-derived.Done()
	require.ErrorIs(t, derived.Err(), context.Canceled)
}
