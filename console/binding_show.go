package console

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
)

// bindingPage is a binding's page: its settings and the allowed_operations
// editor.
type bindingPage struct {
	Binding         binding.Binding
	IntegrationName string
	// Text is what the editor holds: the saved document, pretty-printed, or
	// the admin's unsaved text when a save was refused.
	Text string
	// EditedVersion is the version the text was edited from; a save over a
	// newer version is refused instead of losing that version's changes.
	EditedVersion int
	// Unscoped are the write ops saved before the fixed-values rule that
	// break it: they answer 403 until the binding is fixed.
	Unscoped []bindingspec.Unscoped
	// Ops are the ops "try an op" can run: reads, writes, http_calls and
	// actions, by kind.
	Ops []tryOp
	// Try is the try form as last submitted; Result its report.
	Try    tryForm
	Result *tryResult
}

// tryOp is one op of the try form's list, with an example payload of its
// shape that the form starts from when the op is chosen.
type tryOp struct{ Kind, Name, Example string }

// tryOps lists a spec's runnable ops.
func tryOps(s bindingspec.Spec) []tryOp {
	var ops []tryOp
	add := func(kind, name string) {
		example, _ := bindingspec.ExamplePayload(s, kind, name)
		ops = append(ops, tryOp{kind, name, string(example)})
	}
	for _, r := range s.Reads {
		add("read", r.Op)
	}
	for _, w := range s.Writes {
		add("write", w.Op)
	}
	for _, h := range s.HTTPCalls {
		add("http_call", h.Op)
	}
	for _, a := range s.Actions {
		add("action", a.Name)
	}
	return ops
}

// PayloadRows is how many lines the try form's payload box shows: its
// text's, within bounds.
func (f tryForm) PayloadRows() int {
	return min(max(strings.Count(f.Payload, "\n")+2, 4), 24)
}

// showBinding answers GET /bindings/:id.
func (s *server) showBinding(c *fiber.Ctx) error {
	b, err := s.Bindings.Get(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	text, err := json.MarshalIndent(b.AllowedOperations, "", "  ")
	if err != nil {
		return fmt.Errorf("console: format allowed_operations of %s: %w", b.ID, err)
	}
	return s.renderBinding(c, fiber.StatusOK, b, string(text), b.Version, "")
}

// renderBinding renders a binding's page with the editor holding text.
func (s *server) renderBinding(c *fiber.Ctx, status int, b binding.Binding, text string, edited int, refusal string) error {
	p, err := s.bindingPageOf(c, b, text, edited)
	if err != nil {
		return err
	}
	return s.renderView(c, status, "binding", view{Title: "Binding " + b.Name, Section: "bindings", Error: refusal, Data: p})
}

// bindingPageOf is b's page with the editor holding text.
func (s *server) bindingPageOf(c *fiber.Ctx, b binding.Binding, text string, edited int) (bindingPage, error) {
	p := bindingPage{Binding: b, Text: text, EditedVersion: edited, Unscoped: bindingspec.UnscopedWrites(b.AllowedOperations),
		Ops: tryOps(b.AllowedOperations), Try: tryForm{Payload: "{}"}}
	if len(p.Ops) > 0 {
		p.Try.Payload = p.Ops[0].Example
	}
	// Sample session values: the newest step running this binding (in dev
	// mode, the demo's), so a read scoped to {{task_id}} finds its rows.
	sample, ok, err := s.Tasks.LatestSessionOf(c.UserContext(), b.WorkspaceID, b.ID)
	if err != nil {
		return p, err
	}
	if ok {
		p.Try.TaskID, p.Try.AgentID, p.Try.StepID = sample.TaskID, sample.AgentID, sample.StepID
	}
	if b.IntegrationID != nil {
		names, err := s.integrationNames(c)
		if err != nil {
			return p, err
		}
		p.IntegrationName = names[*b.IntegrationID]
	}
	return p, nil
}
