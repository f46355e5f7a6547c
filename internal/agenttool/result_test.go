package agenttool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
)

func fromComponent() agenttool.ReplyOptions {
	return agenttool.ReplyOptions{CheckOptions: checkOptions(), Producer: apiComponent.ID}
}

// TestParseReply is the result contract table: plain text, the three
// channels, and what breaks them (502, never quoting the reply).
func TestParseReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		want        agenttool.Reply
		display     agenttool.Display
	}{
		{"plain text", "text/plain; charset=utf-8", "Saved it.", agenttool.Reply{Content: "Saved it."}, agenttool.DisplayText},
		{"text that looks like JSON is text", "text/plain", `{"content":"x"}`, agenttool.Reply{Content: `{"content":"x"}`}, agenttool.DisplayText},
		{"no type, not JSON", "", "Saved.", agenttool.Reply{Content: "Saved."}, agenttool.DisplayText},
		{"no type, a JSON object is sniffed", "", `{"content":"Saved."}`, agenttool.Reply{Content: "Saved."}, agenttool.DisplayText},
		{"content only", "application/json", `{"content":"Saved."}`, agenttool.Reply{Content: "Saved."}, agenttool.DisplayText},
		{"markdown", "application/json", `{"content":"c","markdown":"**m**"}`, agenttool.Reply{Content: "c", Markdown: "**m**"}, agenttool.DisplayMarkdown},
		{"embedUrl wins over markdown", "application/json; charset=utf-8", `{"content":"c","markdown":"m","embedUrl":"https://app.example.test/connect?t=1"}`,
			agenttool.Reply{Content: "c", Markdown: "m", EmbedURL: "https://app.example.test/connect?t=1"}, agenttool.DisplayEmbed},
		{"+json media type", "application/vnd.kazzle+json", `{"content":"c"}`, agenttool.Reply{Content: "c"}, agenttool.DisplayText},
		{"markdown at the cap", "application/json", `{"content":"c","markdown":"` + strings.Repeat("m", agenttool.MaxMarkdownBytes) + `"}`,
			agenttool.Reply{Content: "c", Markdown: strings.Repeat("m", agenttool.MaxMarkdownBytes)}, agenttool.DisplayMarkdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := agenttool.ParseReply(context.Background(), tt.contentType, []byte(tt.body), fromComponent())
			require.NoError(t, err)
			require.Equal(t, tt.want, r)
			require.Equal(t, tt.display, r.Display())
		})
	}
}

// TestParseReplyRefusals: each broken reply is a 502 whose message does not
// quote the reply.
func TestParseReplyRefusals(t *testing.T) {
	t.Parallel()
	const secret = "UPSTREAM-SECRET-WORDS"
	tests := []struct {
		name        string
		contentType string
		body        string
	}{
		{"JSON without content", "application/json", `{"markdown":"` + secret + `"}`},
		{"JSON that is not an object", "application/json", `"` + secret + `"`},
		{"JSON with an unknown field", "application/json", `{"content":"c","` + secret + `":1}`},
		{"content not a string", "application/json", `{"content":{"x":"` + secret + `"}}`},
		{"empty text", "text/plain", "  \n"},
		{"binary type", "image/png", secret},
		{"invalid UTF-8", "text/plain", "\xff\xfe" + secret},
		{"markdown over the cap", "application/json", `{"content":"c","markdown":"` + strings.Repeat("m", agenttool.MaxMarkdownBytes+1) + `"}`},
		{"embedUrl http", "application/json", `{"content":"c","embedUrl":"http://app.example.test/` + secret + `"}`},
		{"embedUrl relative", "application/json", `{"content":"c","embedUrl":"/connect/` + secret + `"}`},
		{"embedUrl javascript", "application/json", `{"content":"c","embedUrl":"javascript:alert(1)//` + secret + `"}`},
		{"embedUrl with userinfo", "application/json", `{"content":"c","embedUrl":"https://u:` + secret + `@app.example.test/"}`},
		{"unknown type", "application/json", `{"type":"` + secret + `","content":"c"}`},
		{"card fields on a result", "application/json", `{"content":"c","title":"` + secret + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := agenttool.ParseReply(context.Background(), tt.contentType, []byte(tt.body), fromComponent())
			requireCode(t, err, apperr.BadGateway)
			_, _, msg := apperr.Public(err)
			require.NotContains(t, msg, secret)
		})
	}
}

// card returns a pending_input reply with elements.
func card(elements string) string {
	return `{"type":"pending_input","title":"Connect Gmail","description":"Connect Gmail first.","elements":` + elements + `}`
}

// TestPendingInputCard checks the card's rules and sizes.
func TestPendingInputCard(t *testing.T) {
	t.Parallel()
	button := func(id, label string, extra string) string {
		return fmt.Sprintf(`{"type":"button","id":%q,"label":%q,"input":{"scope":"gmail.readonly"}%s}`, id, label, extra)
	}
	buttons := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, button(fmt.Sprintf("b%d", i), "Go", ""))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"seed example", card(`[` + button("connect", "Connect Gmail", `,"target":{"type":"app","component":"`+apiComponent.ID+`","path":"/oauth/start","method":"POST","body":"${input}"}`) + `]`), true},
		{"button target without component is the producer", card(`[` + button("connect", "Connect", `,"target":{"type":"app","path":"/oauth/start","method":"POST"}`) + `]`), true},
		{"button target to another component", card(`[` + button("connect", "Connect", `,"target":{"type":"app","component":"22222222-1111-1111-1111-111111111111","path":"/x","method":"POST"}`) + `]`), false},
		{"button with a url target", card(`[` + button("open", "Open", `,"target":{"type":"url","url":"https://x.example.test/a","method":"POST","body":"${input}"}`) + `]`), true},
		{"button target with Authorization", card(`[` + button("c", "C", `,"target":{"type":"app","path":"/x","method":"POST","headers":{"authorization":"x"}}`) + `]`), false},
		{"button target with an unknown reference", card(`[` + button("c", "C", `,"target":{"type":"app","path":"/x","method":"POST","body":"${secret}"}`) + `]`), false},
		{"8 buttons", card(buttons(8)), true},
		{"9 buttons", card(buttons(9)), false},
		{"no buttons", card(`[]`), false},
		{"duplicate ids", card(`[` + button("a", "A", "") + `,` + button("a", "B", "") + `]`), false},
		{"id of 64", card(`[` + button(strings.Repeat("i", 64), "A", "") + `]`), true},
		{"id of 65", card(`[` + button(strings.Repeat("i", 65), "A", "") + `]`), false},
		{"id with a slash", card(`[` + button("a/b", "A", "") + `]`), false},
		{"label of 80", card(`[` + button("a", strings.Repeat("l", 80), "") + `]`), true},
		{"label of 81", card(`[` + button("a", strings.Repeat("l", 81), "") + `]`), false},
		{"label empty", card(`[` + button("a", "", "") + `]`), false},
		{"input missing", card(`[{"type":"button","id":"a","label":"A"}]`), false},
		{"element not a button", card(`[{"type":"select","id":"a","label":"A","input":1}]`), false},
		{"title of 120", strings.Replace(card(buttons(1)), "Connect Gmail", strings.Repeat("t", 120), 1), true},
		{"title of 121", strings.Replace(card(buttons(1)), "Connect Gmail", strings.Repeat("t", 121), 1), false},
		{"description of 2000", strings.Replace(card(buttons(1)), "Connect Gmail first.", strings.Repeat("d", 2000), 1), true},
		{"description of 2001", strings.Replace(card(buttons(1)), "Connect Gmail first.", strings.Repeat("d", 2001), 1), false},
		{"content on a card", `{"type":"pending_input","title":"T","content":"c","elements":` + buttons(1) + `}`, false},
		{"input at 16 KiB", card(`[{"type":"button","id":"a","label":"A","input":"` + strings.Repeat("x", agenttool.MaxButtonInputBytes-2) + `"}]`), true},
		{"input past 16 KiB", card(`[{"type":"button","id":"a","label":"A","input":"` + strings.Repeat("x", agenttool.MaxButtonInputBytes-1) + `"}]`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := agenttool.ParseReply(context.Background(), "application/json", []byte(tt.body), fromComponent())
			if !tt.ok {
				requireCode(t, err, apperr.BadGateway)
				return
			}
			require.NoError(t, err)
			require.Equal(t, agenttool.DisplayPending, r.Display())
			require.NotEmpty(t, r.Pending.Elements)
		})
	}
}

// TestAppButtonsOnlyFromComponents: a url target's reply cannot make the
// platform call a component with a signed identity.
func TestAppButtonsOnlyFromComponents(t *testing.T) {
	t.Parallel()
	body := card(`[{"type":"button","id":"c","label":"C","input":{},"target":{"type":"app","component":"` + apiComponent.ID + `","path":"/x","method":"POST"}}]`)
	_, err := agenttool.ParseReply(context.Background(), "application/json", []byte(body), agenttool.ReplyOptions{CheckOptions: checkOptions()})
	requireCode(t, err, apperr.BadGateway)
}

// TestButtonClick resolves what a click does: a target (with the producer
// filled in), or the input as the result.
func TestButtonClick(t *testing.T) {
	t.Parallel()
	body := card(`[{"type":"button","id":"connect","label":"Connect","input":{"scope":"gmail.readonly"},"target":{"type":"app","path":"/oauth/start","method":"POST","body":"${input}"}},
		{"type":"button","id":"skip","label":"Skip","input":{"skipped":true}},
		{"type":"button","id":"later","label":"Later","input":"Ask me later."}]`)
	r, err := agenttool.ParseReply(context.Background(), "application/json", []byte(body), fromComponent())
	require.NoError(t, err)

	run, err := r.Pending.Click("connect")
	require.NoError(t, err)
	require.Nil(t, run.Result)
	require.Equal(t, apiComponent.ID, run.Target.Component, "a button's app target is its producer's component")
	out, err := agenttool.BuildRequest(*run.Target, run.Button.Input, &apiComponent)
	require.NoError(t, err)
	require.JSONEq(t, `{"scope":"gmail.readonly"}`, string(out.Body), "${input} is the button's input")

	run, err = r.Pending.Click("skip")
	require.NoError(t, err)
	require.Nil(t, run.Target)
	require.Equal(t, `{"skipped":true}`, run.Result.Content)

	run, err = r.Pending.Click("later")
	require.NoError(t, err)
	require.Equal(t, "Ask me later.", run.Result.Content, "a string input is its text")

	_, err = r.Pending.Click("nope")
	requireCode(t, err, apperr.NotFound)

	// The card survives storage as JSON and clicks the same.
	var stored agenttool.PendingInput
	require.NoError(t, json.Unmarshal(mustJSON(t, r.Pending), &stored))
	run, err = stored.Click("connect")
	require.NoError(t, err)
	require.Equal(t, apiComponent.ID, run.Target.Component)
}
