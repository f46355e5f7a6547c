package appblock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/apperr"
)

const (
	ourAgent   = "agent-ours"
	ourAsset   = "ast_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	theirAsset = "ast_01ARZ3NDEKTSV4RRFFQ69G5FAW"
	noAsset    = "ast_01ARZ3NDEKTSV4RRFFQ69G5FAX"
)

// owners is the asset table of these tests: which agent uploaded which
// asset (the storage of assets comes with the wiring).
type owners map[string]string

func (o owners) AssetOwner(_ context.Context, id string) (string, error) {
	if a, ok := o[id]; ok {
		return a, nil
	}
	return "", apperr.NotFoundf("no asset %s", id)
}

var assets = owners{ourAsset: ourAgent, theirAsset: "agent-theirs"}

// appBlock is the seed's example block with fields replaced (a value of
// "-" removes the field).
func appBlock(fields map[string]any) map[string]any {
	b := map[string]any{
		"type": "app", "asset_id": ourAsset, "title": "Get Time App",
		"fallback":    "This agent sent an interactive app. Open on the web to run it.",
		"tool_input":  map[string]any{"timezone": "Asia/Ho_Chi_Minh"},
		"tool_result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "14:32 +07:00"}}},
	}
	for k, v := range fields {
		if v == "-" {
			delete(b, k)
			continue
		}
		b[k] = v
	}
	return b
}

func replyBody(t *testing.T, final bool, blocks ...any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"final": final, "blocks": blocks})
	require.NoError(t, err)
	return b
}

// payloadOf returns a tool_input whose compact JSON, with the seed's
// tool_result, is exactly n bytes.
func payloadOf(t *testing.T, n int) map[string]any {
	t.Helper()
	result := appBlock(nil)["tool_result"]
	rb, _ := json.Marshal(result)
	empty, _ := json.Marshal(map[string]any{"p": ""})
	pad := n - len(rb) - len(empty)
	require.Positive(t, pad)
	in := map[string]any{"p": strings.Repeat("x", pad)}
	ib, _ := json.Marshal(in)
	require.Equal(t, n, len(ib)+len(rb))
	return in
}

// TestAppBlockValidation is seed 004's field table: each bound at the limit
// and one past it, a partial reply, another agent's asset, and the 32 KiB
// payload at 32768 and 32769 bytes.
func TestAppBlockValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		final  bool
		block  map[string]any
		reason string // "" when valid
	}{
		{"the seed's example", true, appBlock(nil), ""},
		{"only the required fields", true, appBlock(map[string]any{"tool_input": "-", "tool_result": "-"}), ""},
		{"null optional fields", true, appBlock(map[string]any{"tool_input": nil, "tool_result": nil}), ""},
		{"a partial reply", false, appBlock(nil), "valid only in a final reply"},
		{"title of 1", true, appBlock(map[string]any{"title": "T"}), ""},
		{"title of 0", true, appBlock(map[string]any{"title": ""}), "title is required"},
		{"title missing", true, appBlock(map[string]any{"title": "-"}), "title is required"},
		{"title of 80 characters (160 bytes)", true, appBlock(map[string]any{"title": strings.Repeat("ä", 80)}), ""},
		{"title of 81 characters", true, appBlock(map[string]any{"title": strings.Repeat("ä", 81)}), "title is 81 characters"},
		{"fallback of 1", true, appBlock(map[string]any{"fallback": "F"}), ""},
		{"fallback of 0", true, appBlock(map[string]any{"fallback": ""}), "fallback is required"},
		{"fallback missing", true, appBlock(map[string]any{"fallback": "-"}), "fallback is required"},
		{"fallback of 10000 characters", true, appBlock(map[string]any{"fallback": strings.Repeat("語", 10000)}), ""},
		{"fallback of 10001 characters", true, appBlock(map[string]any{"fallback": strings.Repeat("語", 10001)}), "fallback is 10001 characters"},
		{"asset_id lower case", true, appBlock(map[string]any{"asset_id": strings.ToLower(ourAsset)}), "asset_id must be"},
		{"asset_id with I (not Crockford)", true, appBlock(map[string]any{"asset_id": "ast_01ARZ3NDEKTSV4RRFFQ69G5FAI"}), "asset_id must be"},
		{"asset_id of 25", true, appBlock(map[string]any{"asset_id": ourAsset[:len(ourAsset)-1]}), "asset_id must be"},
		{"asset_id of 27", true, appBlock(map[string]any{"asset_id": ourAsset + "A"}), "asset_id must be"},
		{"asset_id missing", true, appBlock(map[string]any{"asset_id": "-"}), "asset_id must be"},
		{"another agent's asset", true, appBlock(map[string]any{"asset_id": theirAsset}), "not one of this agent's assets"},
		{"an asset that does not exist", true, appBlock(map[string]any{"asset_id": noAsset}), "not one of this agent's assets"},
		{"tool_input an array", true, appBlock(map[string]any{"tool_input": []any{1}}), "tool_input must be a JSON object"},
		{"tool_input a string", true, appBlock(map[string]any{"tool_input": "x"}), "tool_input must be a JSON object"},
		{"tool_result without content", true, appBlock(map[string]any{"tool_result": map[string]any{"structured_content": map[string]any{}}}), "tool_result.content"},
		{"tool_result content of strings", true, appBlock(map[string]any{"tool_result": map[string]any{"content": []any{"x"}}}), "tool_result.content[0] must be an object"},
		{"tool_result structured_content an array", true, appBlock(map[string]any{"tool_result": map[string]any{"content": []any{}, "structured_content": []any{}}}), "structured_content must be an object"},
		{"tool_result with structured_content", true, appBlock(map[string]any{"tool_result": map[string]any{"content": []any{}, "structured_content": map[string]any{"t": 1}}}), ""},
		{"tool_result in camel case", true, appBlock(map[string]any{"tool_result": map[string]any{"content": []any{}, "structuredContent": map[string]any{}}}), "unknown field"},
		{"unknown field", true, appBlock(map[string]any{"html": "<p>"}), "unknown field"},
		{"32768 bytes serialized", true, appBlock(map[string]any{"tool_input": payloadOf(t, 32768)}), ""},
		{"32769 bytes serialized", true, appBlock(map[string]any{"tool_input": payloadOf(t, 32769)}), "32769 bytes serialized together; at most 32768"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := appblock.ParseReply(context.Background(), replyBody(t, tt.final, tt.block), ourAgent, assets)
			if tt.reason == "" {
				require.NoError(t, err)
				require.Len(t, r.Blocks, 1)
				require.Equal(t, appblock.TypeApp, r.Blocks[0].Type)
				return
			}
			requireRefused(t, err, 0, tt.reason)
			require.Empty(t, r.Blocks, "nothing of a refused reply is returned")
		})
	}
}

// requireRefused asserts err is the one invalid_blocks error naming block
// index with reason.
func requireRefused(t *testing.T, err error, index int, reason string) {
	t.Helper()
	require.Error(t, err)
	code, status, msg := apperr.Public(err)
	require.Equal(t, apperr.InvalidBlocks, code, "error: %v", err)
	require.Equal(t, 400, status)
	detail := apperr.DetailOf(err)
	require.Equal(t, "invalid_blocks", detail["code"])
	reasons := detail["blocks"].([]appblock.BlockReason)
	if index < 0 {
		require.Contains(t, msg, reason)
		return
	}
	require.NotEmpty(t, reasons)
	require.Equal(t, index, reasons[0].Index)
	require.Contains(t, reasons[0].Reason, reason)
	require.Contains(t, msg, fmt.Sprintf("blocks[%d]", index))
}

// TestReplyShape: the reply as a whole, and a reason for every refused
// block at once.
func TestReplyShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	r, err := appblock.ParseReply(ctx, replyBody(t, true, map[string]any{"type": "text", "text": "Here it is."}, appBlock(nil)), ourAgent, assets)
	require.NoError(t, err)
	require.Equal(t, "Here it is.", r.Blocks[0].Text)
	require.JSONEq(t, `{"timezone":"Asia/Ho_Chi_Minh"}`, string(r.Blocks[1].ToolInput))

	r, err = appblock.ParseReply(ctx, replyBody(t, false, map[string]any{"type": "text", "text": "Working on it"}), ourAgent, assets)
	require.NoError(t, err, "a partial reply without app blocks is fine")
	require.False(t, r.Final)

	_, err = appblock.ParseReply(ctx, replyBody(t, true,
		appBlock(nil), appBlock(map[string]any{"title": ""}), map[string]any{"type": "video"}, appBlock(map[string]any{"asset_id": theirAsset})), ourAgent, assets)
	requireRefused(t, err, 1, "title is required")
	reasons := apperr.DetailOf(err)["blocks"].([]appblock.BlockReason)
	require.Equal(t, []int{1, 2, 3}, []int{reasons[0].Index, reasons[1].Index, reasons[2].Index})
	require.Contains(t, reasons[1].Reason, `type "video" must be app or text`)

	many := make([]any, appblock.MaxBlocks+1)
	for i := range many {
		many[i] = map[string]any{"type": "text", "text": "x"}
	}
	_, err = appblock.ParseReply(ctx, replyBody(t, true, many[:appblock.MaxBlocks]...), ourAgent, assets)
	require.NoError(t, err)
	_, err = appblock.ParseReply(ctx, replyBody(t, true, many...), ourAgent, assets)
	requireRefused(t, err, -1, "at most 20")

	for body, reason := range map[string]string{
		`{"blocks":[{"type":"text","text":"x"}]}`:                    "final",
		`{"final":true,"blocks":[]}`:                                 "at least one block",
		`{"final":true}`:                                             "at least one block",
		`{"final":"yes","blocks":[{"type":"text","text":"x"}]}`:      "final must be true or false",
		`{"final":true,"blocks":{"type":"text"}}`:                    "blocks must be an array",
		`{"final":true,"blocks":[{"type":"text","text":"x"}],"x":1}`: "unknown field",
	} {
		_, err = appblock.ParseReply(ctx, []byte(body), ourAgent, assets)
		requireRefused(t, err, -1, reason)
	}
	_, err = appblock.ParseReply(ctx, []byte(`{"final":true,`), ourAgent, assets)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "a body that is not JSON is not a block refusal")
}

// TestPayloadBytes: the count is of compact JSON as sent, white space
// between tokens removed, escapes and key order kept.
func TestPayloadBytes(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, appblock.PayloadBytes(nil, json.RawMessage("null")))
	require.Equal(t, len(`{"a":1,"b":"x y"}`), appblock.PayloadBytes(json.RawMessage("{ \"a\" : 1,\n \"b\": \"x y\" }"), nil))
	require.Equal(t, len(`{"s":"\u00e9"}`)+len(`{}`), appblock.PayloadBytes(json.RawMessage(`{"s":"\u00e9"}`), json.RawMessage(`{ }`)),
		"an escape counts as sent, not decoded")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
