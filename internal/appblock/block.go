package appblock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// Block limits (seed 004's field table and "Stability").
const (
	MaxTitle    = 80    // characters (Unicode code points)
	MaxFallback = 10000 // characters
	// MaxToolPayloadBytes bounds tool_input and tool_result together,
	// counted as their compact JSON (see PayloadBytes).
	MaxToolPayloadBytes = 32768
	// MaxBlocks bounds the blocks of one reply.
	MaxBlocks = 20
	// MaxText bounds a text block, in characters.
	MaxText = 10000
)

// Block types.
const (
	TypeApp  = "app"  // an MCP App (seed 004)
	TypeText = "text" // plain text, the reply's words
)

// Reply is a validated reply (POST /api/agent/tasks/{id}/replies): nothing
// of it is stored until it is whole and valid.
type Reply struct {
	Final  bool    `json:"final"`
	Blocks []Block `json:"blocks"`
}

// Block is one validated block: Text for a text block, the rest for an app
// block. ToolInput and ToolResult are compact JSON (nil when absent).
type Block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	AssetID    string          `json:"asset_id,omitempty"`
	Title      string          `json:"title,omitempty"`
	Fallback   string          `json:"fallback,omitempty"`
	ToolInput  json.RawMessage `json:"tool_input,omitempty"`
	ToolResult json.RawMessage `json:"tool_result,omitempty"`
}

// Assets says who owns an asset.
type Assets interface {
	// AssetOwner returns the id of the agent that uploaded asset id, or a
	// not_found error when there is no such asset.
	AssetOwner(ctx context.Context, id string) (agentID string, err error)
}

// BlockReason is why one block was refused.
type BlockReason struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// ParseReply decodes and validates a reply body for agentID: {final: bool
// (required), blocks: [1 to MaxBlocks blocks]}. A text block is {type:
// "text", text: 1 to MaxText characters}. An app block (seed 004) is
// {type: "app", asset_id, title (1–80 characters), fallback (1–10000),
// tool_input? (object), tool_result? ({content: [objects], structured_content?:
// object})}, valid only when final, with tool_input and tool_result at most
// MaxToolPayloadBytes together (PayloadBytes), and an asset that agentID
// uploaded. Unknown fields are refused.
//
// A body that is not JSON is invalid (400); every other refusal is one
// invalid_blocks error (400) whose Detail lists a reason per refused block
// ({"code": "invalid_blocks", "blocks": [{"index", "reason"}]}), every block
// checked so that the agent fixes all at once. An error of assets other
// than not_found is returned as it is.
func ParseReply(ctx context.Context, body []byte, agentID string, assets Assets) (Reply, error) {
	var wire struct {
		Final  *bool             `json:"final"`
		Blocks []json.RawMessage `json:"blocks"`
	}
	if !json.Valid(body) {
		return Reply{}, apperr.Invalidf("the request body is not valid JSON: send {\"final\": …, \"blocks\": […]}")
	}
	if err := strictjson.Decode(body, &wire); err != nil {
		return Reply{}, refused(nil, "%s", publicMessage(err))
	}
	switch {
	case wire.Final == nil:
		return Reply{}, refused(nil, "final (true or false) is required")
	case len(wire.Blocks) == 0:
		return Reply{}, refused(nil, "blocks must hold at least one block")
	case len(wire.Blocks) > MaxBlocks:
		return Reply{}, refused(nil, "blocks holds %d blocks; at most %d are allowed", len(wire.Blocks), MaxBlocks)
	}
	r := Reply{Final: *wire.Final, Blocks: make([]Block, len(wire.Blocks))}
	var reasons []BlockReason
	for i, raw := range wire.Blocks {
		b, reason, err := parseBlock(ctx, raw, r.Final, agentID, assets)
		if err != nil {
			return Reply{}, err
		}
		if reason != "" {
			reasons = append(reasons, BlockReason{Index: i, Reason: reason})
			continue
		}
		r.Blocks[i] = b
	}
	if len(reasons) > 0 {
		return Reply{}, refused(reasons, "")
	}
	return r, nil
}

// refused is the one invalid_blocks error: the message names the first
// reason (or says what is wrong with the reply as a whole), Detail lists
// them all.
func refused(reasons []BlockReason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if len(reasons) > 0 {
		msg = fmt.Sprintf("blocks[%d]: %s", reasons[0].Index, reasons[0].Reason)
		if len(reasons) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(reasons)-1)
		}
	}
	if reasons == nil {
		reasons = []BlockReason{}
	}
	e := apperr.New(apperr.InvalidBlocks, "the reply was refused: %s", msg)
	e.Detail = map[string]any{"code": string(apperr.InvalidBlocks), "blocks": reasons}
	return e
}

// publicMessage is what err says to a caller.
func publicMessage(err error) string {
	_, _, msg := apperr.Public(err)
	return msg
}

// parseBlock validates one block; a non-empty reason refuses it.
func parseBlock(ctx context.Context, raw json.RawMessage, final bool, agentID string, assets Assets) (Block, string, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Block{}, "a block must be a JSON object with a type", nil
	}
	switch head.Type {
	case TypeText:
		var b Block
		var w struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := strictjson.Unmarshal(raw, &w); err != nil {
			return Block{}, err.Error(), nil
		}
		if reason := checkChars(w.Text, "text", MaxText); reason != "" {
			return Block{}, reason, nil
		}
		b.Type, b.Text = TypeText, w.Text
		return b, "", nil
	case TypeApp:
		return parseApp(ctx, raw, final, agentID, assets)
	case "":
		return Block{}, "type is required (app or text)", nil
	}
	return Block{}, fmt.Sprintf("type %q must be app or text", clip(head.Type, 40)), nil
}

// wireApp is an app block as sent.
type wireApp struct {
	Type       string          `json:"type"`
	AssetID    string          `json:"asset_id"`
	Title      *string         `json:"title"`
	Fallback   *string         `json:"fallback"`
	ToolInput  json.RawMessage `json:"tool_input"`
	ToolResult json.RawMessage `json:"tool_result"`
}

// wireToolResult is seed 004's tool_result, an MCP CallToolResult in snake
// case.
type wireToolResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structured_content"`
}

func parseApp(ctx context.Context, raw json.RawMessage, final bool, agentID string, assets Assets) (Block, string, error) {
	if !final {
		return Block{}, "an app block is valid only in a final reply; this one is partial (final: false)", nil
	}
	var w wireApp
	if err := strictjson.Unmarshal(raw, &w); err != nil {
		return Block{}, err.Error(), nil
	}
	if !IsAssetID(w.AssetID) {
		return Block{}, "asset_id must be ast_ and a 26-character ULID", nil
	}
	if w.Title == nil {
		return Block{}, "title is required", nil
	}
	if reason := checkChars(*w.Title, "title", MaxTitle); reason != "" {
		return Block{}, reason, nil
	}
	if w.Fallback == nil {
		return Block{}, "fallback is required", nil
	}
	if reason := checkChars(*w.Fallback, "fallback", MaxFallback); reason != "" {
		return Block{}, reason, nil
	}
	b := Block{Type: TypeApp, AssetID: w.AssetID, Title: *w.Title, Fallback: *w.Fallback}
	var err error
	if b.ToolInput, err = optionalObject(w.ToolInput); err != nil {
		return Block{}, "tool_input must be a JSON object", nil
	}
	if b.ToolResult, err = optionalObject(w.ToolResult); err != nil {
		return Block{}, "tool_result must be a JSON object", nil
	}
	if b.ToolResult != nil {
		if reason := checkToolResult(b.ToolResult); reason != "" {
			return Block{}, reason, nil
		}
	}
	if n := PayloadBytes(b.ToolInput, b.ToolResult); n > MaxToolPayloadBytes {
		return Block{}, fmt.Sprintf("tool_input and tool_result are %d bytes serialized together; at most %d are allowed", n, MaxToolPayloadBytes), nil
	}
	owner, err := assets.AssetOwner(ctx, b.AssetID)
	switch {
	case apperr.Is(err, apperr.NotFound) || (err == nil && owner != agentID):
		return Block{}, "asset_id is not one of this agent's assets", nil
	case err != nil:
		return Block{}, "", fmt.Errorf("appblock: look up asset %s: %w", b.AssetID, err)
	}
	return b, "", nil
}

// checkToolResult checks tool_result's shape: content an array of objects
// (required), structured_content an object when present.
func checkToolResult(raw json.RawMessage) string {
	var tr wireToolResult
	if err := strictjson.Unmarshal(raw, &tr); err != nil {
		return "tool_result: " + err.Error()
	}
	if tr.Content == nil {
		return "tool_result.content (an array of objects) is required"
	}
	for i, c := range tr.Content {
		if !isObject(c) {
			return fmt.Sprintf("tool_result.content[%d] must be an object", i)
		}
	}
	if tr.StructuredContent != nil && !isObject(tr.StructuredContent) {
		return "tool_result.structured_content must be an object"
	}
	return ""
}

// optionalObject compacts raw when it is a JSON object; absent or null is
// nil; anything else is an error.
func optionalObject(raw json.RawMessage) (json.RawMessage, error) {
	if strictjson.IsNull(raw) {
		return nil, nil
	}
	if !isObject(raw) {
		return nil, fmt.Errorf("not an object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// PayloadBytes is how seed 004's "tool_input and tool_result together …
// serialized" is counted: the length in bytes of each one's compact JSON
// (the value as sent, with the white space between tokens removed and
// nothing else changed: keys keep their order, strings their escapes),
// added up; an absent or null one counts 0.
func PayloadBytes(toolInput, toolResult json.RawMessage) int {
	n := 0
	for _, raw := range []json.RawMessage{toolInput, toolResult} {
		if strictjson.IsNull(raw) {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return len(raw)
		}
		n += buf.Len()
	}
	return n
}

// checkChars checks a required text of 1 to max characters (code points).
func checkChars(s, field string, max int) string {
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return field + " is required (at least 1 character)"
	case n > max:
		return fmt.Sprintf("%s is %d characters; at most %d are allowed", field, n, max)
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
