package queue

import (
	"context"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MaxBatch bounds the tasks one bulk action names: a listing's page.
const MaxBatch = ListLimit

// BatchActions are the actions a bulk action may take, by their form name.
var BatchActions = []string{"run", "archive", "delete"}

// Outcome is what a bulk action did to one task: Err is nil when it was
// done (and audited).
type Outcome struct {
	ID  string
	Err error
}

// Batch takes action (one of BatchActions) on each task of ids in queue,
// each checked and audited as the single action is; a task it fails on is
// reported in its Outcome and the others are still acted on. ids repeated
// are acted on once.
func (s *Service) Batch(ctx context.Context, workspaceID, actor, queue, action string, ids []string) ([]Outcome, error) {
	if err := s.check(queue); err != nil {
		return nil, err
	}
	do := map[string]func(context.Context, string, string, string, string) error{
		"run": s.RunTask, "archive": s.ArchiveTask, "delete": s.DeleteTask,
	}[action]
	if do == nil {
		return nil, apperr.Invalidf("a bulk action is one of %v, not %q", BatchActions, action)
	}
	unique, err := uniqueIDs(ids)
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, 0, len(unique))
	for _, id := range unique {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, Outcome{ID: id, Err: do(ctx, workspaceID, actor, queue, id)})
	}
	return out, nil
}

// uniqueIDs returns the non-empty ids in their first order, each once. It
// refuses a selection of more than MaxBatch distinct ids as soon as it meets
// the (MaxBatch+1)th, with a set, so a form of thousands of ids (any client
// can post one) costs one pass over them and never a set larger than a batch
// (docs/operators.md#queues-in-the-console).
func uniqueIDs(ids []string) ([]string, error) {
	seen := make(map[string]struct{}, min(len(ids), MaxBatch+1))
	unique := make([]string, 0, min(len(ids), MaxBatch))
	for _, id := range ids {
		if _, dup := seen[id]; dup || id == "" {
			continue
		}
		if len(unique) == MaxBatch {
			return nil, apperr.Invalidf("a bulk action takes at most %d tasks; select fewer", MaxBatch)
		}
		seen[id] = struct{}{}
		unique = append(unique, id)
	}
	if len(unique) == 0 {
		return nil, apperr.Invalidf("select at least one task")
	}
	return unique, nil
}
