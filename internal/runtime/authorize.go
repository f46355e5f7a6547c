package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// taskPlaceholders are the session values a preview session does not have:
// an op whose template names one is scoped to a task.
var taskPlaceholders = []string{"{{task_id}}", "{{step_id}}", "{{agent_id}}"}

// Authorize decides whether the session may call verb at all, before the verb
// runs; it is the one place a session's kind limits its verbs
// (docs/architecture.md#preview-sessions). A task's session may call every
// verb (the binding then decides the op). A preview session is read-only and
// on no task: /read of an op that does not name the task is allowed; /write,
// /action and /run, which change data, resume a task or spend on a tool,
// and /capability, which reads the session's own task's files, are 403.
func (s *Service) Authorize(ctx context.Context, c session.Claims, verb string, body []byte) error {
	if !c.Preview() {
		return nil
	}
	switch verb {
	case "read":
		return s.previewRead(ctx, c, body)
	case "capability":
		return apperr.Forbiddenf("preview sessions are read-only and on no task: /capability reads the session's own task, which a preview does not have")
	default:
		return apperr.Forbiddenf("preview sessions are read-only: /%s is refused", verb)
	}
}

// previewRead refuses a read op whose template names the task, step or
// agent of the session: the preview has none, and the op's rows are a
// task's. A body naming no op, or an op the binding lacks, passes on to
// Read's own refusal.
func (s *Service) previewRead(ctx context.Context, c session.Claims, body []byte) error {
	op, ok := strictjson.PeekString(body, "op")
	if !ok {
		return nil
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return err
	}
	var decl any
	if r, isRead := b.Read(op); isRead {
		decl = r
	} else if call, isCall := b.HTTPCall(op); isCall {
		decl = call
	} else {
		return nil
	}
	raw, err := json.Marshal(decl)
	if err != nil {
		return fmt.Errorf("runtime: encode op %q: %w", op, err)
	}
	for _, p := range taskPlaceholders {
		if strings.Contains(string(raw), p) {
			return apperr.Forbiddenf("preview sessions are read-only and on no task: op %q is scoped to the task (%s)", op, p)
		}
	}
	return nil
}
