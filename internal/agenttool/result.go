package agenttool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// Limits of a handler's reply (seed 003, "Handler response" and "Pending
// input"). The whole reply is at most gateway.MaxReplyBytes.
const (
	MaxMarkdownBytes     = 64 << 10 // "a short rich-text summary"
	MaxEmbedURLLength    = 2048
	MaxCardTitle         = 120  // characters
	MaxCardDescription   = 2000 // characters
	MaxButtons           = 8
	MaxButtonLabel       = 80 // characters
	MaxButtonIDLength    = 64
	MaxButtonInputBytes  = 16 << 10 // compact JSON
	PendingInputType     = "pending_input"
	ButtonElementType    = "button"
	jsonMediaTypeSuffix  = "+json"
	plainTextMediaPrefix = "text/"
)

// buttonIDRule is a button id: it travels in a URL path
// (/tool-calls/{call}/buttons/{button}).
var buttonIDRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Display says which channel the host shows for a result.
type Display string

// Displays, in the order a host prefers them.
const (
	DisplayPending  Display = "pending_input" // the card, its buttons live
	DisplayEmbed    Display = "embed"         // embedUrl in a sandboxed iframe; wins over markdown
	DisplayMarkdown Display = "markdown"      // markdown.Render(Markdown)
	DisplayText     Display = "text"          // content as plain text
)

// Reply is a handler's parsed reply: a result (Content for the agent,
// optionally Markdown or EmbedURL for the person), or a pending-input card
// that parks the task.
type Reply struct {
	Content  string        `json:"content"`
	Markdown string        `json:"markdown,omitempty"`
	EmbedURL string        `json:"embedUrl,omitempty"`
	Pending  *PendingInput `json:"pending_input,omitempty"`
}

// NULReplacement stands in a stored result for each NUL character a reply's
// text held: Postgres stores no U+0000 in text or jsonb, and a text/plain
// reply (or a builtin's output) may hold one.
const NULReplacement = "\uFFFD"

// Storable returns r with each NUL character of its text replaced by
// NULReplacement, so it can be recorded (a card's text is strict JSON,
// which refuses NUL already).
func (r Reply) Storable() Reply {
	for _, s := range []*string{&r.Content, &r.Markdown, &r.EmbedURL} {
		if strings.IndexByte(*s, 0) >= 0 {
			*s = strings.ReplaceAll(*s, "\x00", NULReplacement)
		}
	}
	return r
}

// Display returns the channel the host shows: the card when pending, else
// embedUrl, else markdown, else the text.
func (r Reply) Display() Display {
	switch {
	case r.Pending != nil:
		return DisplayPending
	case r.EmbedURL != "":
		return DisplayEmbed
	case r.Markdown != "":
		return DisplayMarkdown
	}
	return DisplayText
}

// PendingInput is a card that asks the person to act (seed 003, "Pending
// input"). It is saved on the tool call; a click runs one of its buttons.
type PendingInput struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Elements    []Button `json:"elements"`
}

// Button is one element of a card. A button without Target submits Input
// as the tool result; one with a Target runs it with Input as ${input} and
// its result is the tool result.
type Button struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Label  string          `json:"label"`
	Input  json.RawMessage `json:"input"`
	Target *Target         `json:"target,omitempty"`
}

// wireReply is every field a reply may carry, decoded strictly.
type wireReply struct {
	Type        string          `json:"type"`
	Content     *string         `json:"content"`
	Markdown    *string         `json:"markdown"`
	EmbedURL    *string         `json:"embedUrl"`
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	Elements    json.RawMessage `json:"elements"`
}

// ReplyOptions are what checking a reply needs: the button targets of a
// card are checked like a declaration's, with Producer (the component id of
// the call whose reply it is; empty for a url or builtin target) as the
// component a button's app target falls back to and the only one it may
// name. A reply from a target that is not a component may not carry app
// buttons: it must not make the platform call a component with a signed
// identity.
type ReplyOptions struct {
	CheckOptions
	Producer string
}

// ParseReply reads a handler's reply by its media type: a JSON type
// (application/json or any +json) must be a JSON object of the result
// channels or a pending-input card; any text/ type is plain text; no type
// at all is sniffed (a JSON object is JSON, anything else text). Every
// refusal is a 502 whose message names what is wrong with the shape and
// never quotes the reply; the cause (which may) is for the log.
func ParseReply(ctx context.Context, contentType string, body []byte, o ReplyOptions) (Reply, error) {
	media := ""
	if contentType != "" {
		media, _, _ = mime.ParseMediaType(contentType)
	}
	isJSON := media == "application/json" || strings.HasSuffix(media, jsonMediaTypeSuffix)
	trimmed := bytes.TrimSpace(body)
	if media == "" && len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
		isJSON = true
	}
	if !isJSON {
		if media != "" && !strings.HasPrefix(media, plainTextMediaPrefix) {
			return Reply{}, badReply(nil, "its content type is neither JSON nor text")
		}
		if !utf8.Valid(body) {
			return Reply{}, badReply(nil, "the text is not valid UTF-8")
		}
		if len(trimmed) == 0 {
			return Reply{}, badReply(nil, "it is empty; a result has content")
		}
		return Reply{Content: string(body)}, nil
	}
	var w wireReply
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return Reply{}, badReply(err, "it is not a JSON object of content, markdown and embedUrl, or a pending_input card")
	}
	if w.Type == PendingInputType {
		card, err := parseCard(ctx, w, o)
		if err != nil {
			return Reply{}, err
		}
		return Reply{Pending: &card}, nil
	}
	if w.Type != "" {
		return Reply{}, badReply(nil, "type must be pending_input or absent")
	}
	if w.Title != nil || w.Description != nil || w.Elements != nil {
		return Reply{}, badReply(nil, "title, description and elements belong to a pending_input card")
	}
	if w.Content == nil {
		return Reply{}, badReply(nil, "content is required")
	}
	r := Reply{Content: *w.Content}
	if w.Markdown != nil {
		if len(*w.Markdown) > MaxMarkdownBytes {
			return Reply{}, badReply(nil, fmt.Sprintf("markdown is over %d bytes", MaxMarkdownBytes))
		}
		r.Markdown = *w.Markdown
	}
	if w.EmbedURL != nil {
		if err := CheckEmbedURL(*w.EmbedURL); err != nil {
			return Reply{}, badReply(err, "embedUrl must be an absolute https URL")
		}
		r.EmbedURL = *w.EmbedURL
	}
	return r, nil
}

// CheckEmbedURL accepts an absolute https URL with a host and no userinfo,
// at most MaxEmbedURLLength bytes (seed 003: "An absolute URL your app
// serves"; the host frames it sandboxed).
func CheckEmbedURL(raw string) error {
	if len(raw) > MaxEmbedURLLength {
		return fmt.Errorf("embedUrl is longer than %d bytes", MaxEmbedURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "https" || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return fmt.Errorf("embedUrl %q is not an absolute https URL with a host and no userinfo", clip(raw, 80))
	}
	return nil
}

// parseCard checks a pending_input card.
func parseCard(ctx context.Context, w wireReply, o ReplyOptions) (PendingInput, error) {
	if w.Content != nil || w.Markdown != nil || w.EmbedURL != nil {
		return PendingInput{}, badReply(nil, "a pending_input card has no content, markdown or embedUrl")
	}
	card := PendingInput{Type: PendingInputType}
	if w.Title == nil {
		return PendingInput{}, badReply(nil, "a pending_input card needs a title")
	}
	if err := checkText(*w.Title, "title", MaxCardTitle); err != nil {
		return PendingInput{}, badReply(err, fmt.Sprintf("its title must be 1 to %d characters", MaxCardTitle))
	}
	card.Title = *w.Title
	if w.Description != nil {
		if n := utf8.RuneCountInString(*w.Description); n > MaxCardDescription || !utf8.ValidString(*w.Description) {
			return PendingInput{}, badReply(nil, fmt.Sprintf("its description must be at most %d characters", MaxCardDescription))
		}
		card.Description = *w.Description
	}
	if err := strictjson.Unmarshal(w.Elements, &card.Elements); err != nil || len(card.Elements) == 0 || len(card.Elements) > MaxButtons {
		return PendingInput{}, badReply(err, fmt.Sprintf("elements must be an array of 1 to %d buttons", MaxButtons))
	}
	seen := map[string]bool{}
	for i := range card.Elements {
		b := &card.Elements[i]
		where := fmt.Sprintf("elements[%d]", i)
		switch {
		case b.Type != ButtonElementType:
			return PendingInput{}, badReply(nil, where+".type must be button")
		case !buttonIDRule.MatchString(b.ID):
			return PendingInput{}, badReply(nil, fmt.Sprintf("%s.id must be 1 to %d letters, digits, _ or -", where, MaxButtonIDLength))
		case seen[b.ID]:
			return PendingInput{}, badReply(nil, where+".id repeats an earlier button's id")
		}
		seen[b.ID] = true
		if err := checkText(b.Label, "label", MaxButtonLabel); err != nil {
			return PendingInput{}, badReply(err, fmt.Sprintf("%s.label must be 1 to %d characters", where, MaxButtonLabel))
		}
		if strictjson.IsNull(b.Input) {
			return PendingInput{}, badReply(nil, where+".input is required")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b.Input); err != nil || compact.Len() > MaxButtonInputBytes {
			return PendingInput{}, badReply(err, fmt.Sprintf("%s.input must be at most %d bytes of JSON", where, MaxButtonInputBytes))
		}
		b.Input = compact.Bytes()
		if b.Target != nil {
			if err := checkButtonTarget(ctx, *b.Target, where+".target", o); err != nil {
				return PendingInput{}, badReply(err, where+".target is not a valid target")
			}
			if b.Target.Type == TargetApp && b.Target.Component == "" {
				b.Target.Component = o.Producer
			}
		}
	}
	return card, nil
}

// checkButtonTarget is CheckTarget for a button: an app target only from a
// component's reply, and only to that component.
func checkButtonTarget(ctx context.Context, t Target, field string, o ReplyOptions) error {
	if t.Type == TargetApp && o.Producer == "" {
		return apperr.Invalidf("%s: only a component's reply may carry an app target", field)
	}
	return CheckTarget(ctx, t, field, o.CheckOptions, o.Producer)
}

// badReply is a reply that breaks the result contract: 502, with what is
// wrong in our words; cause (which may quote the reply) is only logged.
func badReply(cause error, what string) error {
	return apperr.Wrap(cause, apperr.BadGateway, "the tool's reply is not a valid result: %s", what)
}

// ButtonRun is what a click on a card's button does.
type ButtonRun struct {
	Button Button
	// Target is the button's target (its app component filled in), nil when
	// the button has none.
	Target *Target
	// Result is the tool result of a button without a target: its input.
	Result *Reply
}

// Click returns what pressing the button id does. A card has each id once;
// an unknown id is a 404.
func (p PendingInput) Click(id string) (ButtonRun, error) {
	for _, b := range p.Elements {
		if b.ID != id {
			continue
		}
		if b.Target != nil {
			return ButtonRun{Button: b, Target: b.Target}, nil
		}
		content, err := InputAsContent(b.Input)
		if err != nil {
			return ButtonRun{}, err
		}
		return ButtonRun{Button: b, Result: &Reply{Content: content}}, nil
	}
	return ButtonRun{}, apperr.NotFoundf("the card has no button %q", clip(id, 64))
}

// InputAsContent is the content of a result that is a button's input: a
// JSON string as its text, any other value as its compact JSON.
func InputAsContent(input json.RawMessage) (string, error) {
	v, err := newValues(input, nil)
	if err != nil {
		return "", err
	}
	return text(v.input)
}
