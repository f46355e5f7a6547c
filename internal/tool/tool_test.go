package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/models"
)

func TestSetRoutesByBaseTool(t *testing.T) {
	t.Parallel()
	set := tool.Set{
		models.BaseTranslateText: tool.Func(func(_ context.Context, c tool.Call) (tool.Result, error) {
			return tool.Result{Output: json.RawMessage(`{"ok":true}`), Units: 2}, nil
		}),
		models.BaseMSSQLQuery: nil, // configured off
	}
	res, err := set.Run(context.Background(), tool.Call{BaseTool: models.BaseTranslateText})
	require.NoError(t, err)
	require.Equal(t, 2, res.Units)
	require.JSONEq(t, `{"ok":true}`, string(res.Output))

	for _, base := range []string{models.BaseMSSQLQuery, "shell_tool", ""} {
		_, err := set.Run(context.Background(), tool.Call{BaseTool: base})
		require.True(t, apperr.Is(err, apperr.NotImplemented), "%q: %v", base, err)
	}
}

func TestSetTurnsErrorsAfterTheDeadlineIntoTimeouts(t *testing.T) {
	t.Parallel()
	// An executor that fails with whatever its backing service says once it
	// is cancelled (a driver's "context canceled", a broken pipe).
	set := tool.Set{"slow": tool.Func(func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, errors.New("read tcp: use of closed network connection")
	})}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := set.Run(ctx, tool.Call{BaseTool: "slow"})
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = set.Run(ctx, tool.Call{BaseTool: "slow"})
	require.True(t, apperr.Is(err, apperr.Timeout), "a cancelled run is the API's deadline: %v", err)

	// A run that "succeeds" after its context ended is not believed either.
	set["late"] = tool.Func(func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{Output: json.RawMessage(`1`)}, nil
	})
	_, err = set.Run(ctx, tool.Call{BaseTool: "late"})
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
}

func TestFailurePassesThrough(t *testing.T) {
	t.Parallel()
	set := tool.Set{"raise": tool.Func(func(context.Context, tool.Call) (tool.Result, error) {
		return tool.Result{}, tool.Failf("ValueError: %s", "boom")
	})}
	_, err := set.Run(context.Background(), tool.Call{BaseTool: "raise"})
	f, ok := tool.AsFailure(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "ValueError: boom", f.Message)
	_, ok = tool.AsFailure(apperr.Invalidf("x"))
	require.False(t, ok)
}

func TestDecodeInput(t *testing.T) {
	t.Parallel()
	type in struct {
		Texts  []string `json:"texts"`
		Target string   `json:"target_language"`
	}
	var v in
	require.NoError(t, tool.DecodeInput(json.RawMessage(`{"texts":["a"],"target_language":"de","task_id":"t-1","extra":{}}`), &v))
	require.Equal(t, in{Texts: []string{"a"}, Target: "de"}, v, "unknown keys (session ids) are ignored")

	v = in{}
	require.NoError(t, tool.DecodeInput(nil, &v), "an empty input is {}")
	require.NoError(t, tool.DecodeInput(json.RawMessage(`{"texts":null}`), &v))
	require.Nil(t, v.Texts)

	for raw, want := range map[string]string{
		`{"texts":"a"}`:           "input.texts: expected an array, not string",
		`{"target_language":7}`:   "input.target_language: expected a string, not number",
		`[1,2]`:                   "must be a JSON object",
		`"text"`:                  "must be a JSON object",
		`{"texts":["a",{"b":1}]}`: "input.texts",
		`{"texts":["a"]`:          "must be a JSON object",
	} {
		err := tool.DecodeInput(json.RawMessage(raw), &in{})
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", raw, err)
		require.ErrorContains(t, err, want, raw)
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	var cfg struct {
		Code string `json:"code"`
	}
	err := tool.Settings(tool.Call{BaseTool: models.BasePythonCode}, &cfg)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, "runs only as a configured tool")

	ct := &models.ConfiguredTool{DisplayName: "Sum", Config: models.JSON(`{"code":"def main(i): return 1"}`)}
	require.NoError(t, tool.Settings(tool.Call{BaseTool: models.BasePythonCode, Tool: ct}, &cfg))
	require.Equal(t, "def main(i): return 1", cfg.Code)

	ct.Config = models.JSON(`{"code":5}`)
	err = tool.Settings(tool.Call{BaseTool: models.BasePythonCode, Tool: ct}, &cfg)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, `configured tool "Sum"`)
}
