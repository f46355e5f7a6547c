package console

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/runtime"
)

// tryForm is the "try an op" form as the admin filled it, shown again with
// the report.
type tryForm struct {
	Op      string
	Payload string
	TaskID  string
	AgentID string
	StepID  string
}

// tryResult is a try's report as the page shows it: JSON pretty-printed.
type tryResult struct {
	runtime.TryReport
	ReplyText string
	Args      []string // each statement's arguments, as JSON
}

// tryBinding answers POST /bindings/:id/try: the op runs as a bundle's
// session with the sample values would run it (a read for real, writes in
// a rolled-back transaction, http_calls for real, a rest write shown but
// not sent), and the binding's page shows the exact SQL and arguments or
// the exact requests (credentials masked) and the reply. Audited.
func (s *server) tryBinding(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	b, err := s.Bindings.Get(ctx, a.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	form := tryForm{Op: c.FormValue("op"), Payload: c.FormValue("payload"),
		TaskID: c.FormValue("task_id"), AgentID: c.FormValue("agent_id"), StepID: c.FormValue("step_id")}
	payload := strings.TrimSpace(form.Payload)
	if payload == "" {
		payload = "{}"
	}
	if !json.Valid([]byte(payload)) {
		return s.renderTry(c, fiber.StatusBadRequest, b, form, nil, "the sample payload is not JSON")
	}
	rep, err := s.Runtime.Try(ctx, runtime.TryInput{
		Binding: binding.NewLoaded(b), Op: form.Op, Payload: json.RawMessage(payload),
		Session: map[string]string{"task_id": form.TaskID, "agent_id": form.AgentID, "step_id": form.StepID},
	})
	if err != nil {
		return err
	}
	err = s.Admin.Audit(ctx, audit.Entry{
		WorkspaceID: a.WorkspaceID, Actor: a.actor(), Action: "binding.try", TargetType: "binding", TargetID: b.ID,
		Detail: map[string]any{"op": form.Op, "kind": rep.Kind, "status": rep.Status, "version": b.Version,
			"statements": len(rep.Statements), "requests": len(rep.Requests), "rolled_back": rep.RolledBack, "not_sent": rep.NotSent},
	})
	if err != nil {
		return err
	}
	return s.renderTry(c, fiber.StatusOK, b, form, &rep, "")
}

// renderTry renders the binding's page with the try form and its report.
func (s *server) renderTry(c *fiber.Ctx, status int, b binding.Binding, form tryForm, rep *runtime.TryReport, refusal string) error {
	text, err := json.MarshalIndent(b.AllowedOperations, "", "  ")
	if err != nil {
		return fmt.Errorf("console: format allowed_operations of %s: %w", b.ID, err)
	}
	p, err := s.bindingPageOf(c, b, string(text), b.Version)
	if err != nil {
		return err
	}
	p.Try = form
	if rep != nil {
		res := tryResult{TryReport: *rep}
		reply, err := json.MarshalIndent(rep.Reply, "", "  ")
		if err != nil {
			return apperr.Wrap(err, apperr.Internal, "format the reply of a try")
		}
		res.ReplyText = string(reply)
		for _, st := range rep.Statements {
			args, err := json.Marshal(st.Args)
			if err != nil {
				return apperr.Wrap(err, apperr.Internal, "format the arguments of a try")
			}
			res.Args = append(res.Args, string(args))
		}
		p.Result = &res
	}
	return s.renderView(c, status, "binding", view{Title: "Binding " + b.Name, Section: "bindings", Error: refusal, Data: p})
}
