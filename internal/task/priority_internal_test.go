package task

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPriorityValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want float64
		ok   bool
	}{
		{`12`, 12, true}, {`-3.5`, -3.5, true}, {`"1200.50"`, 1200.5, true}, {`" 7 "`, 7, true},
		{`"high"`, 0, false}, {`null`, 0, false}, {`true`, 0, false}, {`{"v":1}`, 0, false}, {``, 0, false}, {`"Inf"`, 0, false},
	} {
		got, ok := priorityValue(json.RawMessage(tc.raw))
		require.Equal(t, tc.ok, ok, tc.raw)
		require.Equal(t, tc.want, got, tc.raw)
	}
}
