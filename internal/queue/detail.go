package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MaxPayloadDetail caps the payload a task's page shows: ours carry ids, a
// larger one is shown cut with a note rather than sent whole to the browser.
const MaxPayloadDetail = 64 << 10

// Detail is everything asynq keeps about one task, for its page.
type Detail struct {
	Task
	// Payload is the task's payload, indented when it is JSON, cut at
	// MaxPayloadDetail bytes (PayloadBytes is its full size, PayloadCut
	// says it was cut).
	PayloadBytes int
	PayloadCut   bool
	Headers      []Header
	Group        string
	Timeout      time.Duration
	Deadline     time.Time
	// PendingSince is when the task last became pending (enqueued, or made
	// pending again by a retry or a run); asynq forgets it once a worker
	// takes the task, so it is zero for a task in any other state.
	PendingSince time.Time
	CompletedAt  time.Time
	Retention    time.Duration
	// Orphaned says an active task's worker stopped answering.
	Orphaned bool
	Result   string
}

// Header is one task header (such as the id of the request that caused it).
type Header struct{ Name, Value string }

// taskKey is the hash asynq keeps a task in (asynq's base.TaskKey, stable
// since v0.18); its pending_since field is not in asynq.TaskInfo.
func taskKey(q, id string) string { return "asynq:{" + q + "}:t:" + id }

// TaskDetail returns task id of queue. An unknown id is not_found.
func (s *Service) TaskDetail(ctx context.Context, queue, id string) (Detail, error) {
	if err := s.check(queue); err != nil {
		return Detail{}, err
	}
	ti, err := s.insp.GetTaskInfo(queue, id)
	switch {
	case errors.Is(err, asynq.ErrQueueNotFound), errors.Is(err, asynq.ErrTaskNotFound):
		return Detail{}, apperr.NotFoundf("task %s is not in queue %s", id, queue)
	case err != nil:
		return Detail{}, apperr.Wrap(err, apperr.Unavailable, "task %s of queue %s cannot be read; retry", id, queue)
	}
	d := Detail{Task: taskOf(ti, ti.State.String()), PayloadBytes: len(ti.Payload), Group: ti.Group,
		Timeout: ti.Timeout, Deadline: ti.Deadline, CompletedAt: ti.CompletedAt, Retention: ti.Retention,
		Orphaned: ti.IsOrphaned}
	d.Payload, d.PayloadCut = showPayload(ti.Payload, MaxPayloadDetail)
	d.Result, _ = showPayload(ti.Result, MaxPayloadDetail)
	for k, v := range ti.Headers {
		d.Headers = append(d.Headers, Header{Name: k, Value: v})
	}
	sort.Slice(d.Headers, func(i, j int) bool { return d.Headers[i].Name < d.Headers[j].Name })
	if ti.State == asynq.TaskStatePending {
		raw, err := s.redis.HGet(ctx, taskKey(queue, id), "pending_since").Result()
		if ns, perr := strconv.ParseInt(raw, 10, 64); err == nil && perr == nil {
			d.PendingSince = time.Unix(0, ns)
		}
	}
	return d, nil
}

// showPayload renders raw for a page: indented when it is JSON and fits
// max, else its first max bytes (cut on a rune boundary) with cut set.
func showPayload(raw []byte, max int) (shown string, cut bool) {
	if len(raw) > max {
		end := max
		for end > 0 && !utf8.RuneStart(raw[end]) {
			end--
		}
		return string(raw[:end]), true
	}
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") == nil {
		return out.String(), false
	}
	return string(raw), false
}

// taskOf is the listing's view of ti, in state; the payload is cut to
// maxPayloadShown.
func taskOf(ti *asynq.TaskInfo, state string) Task {
	payload := string(ti.Payload)
	if len(payload) > maxPayloadShown {
		payload = payload[:maxPayloadShown] + "…"
	}
	var owner struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if json.Unmarshal(ti.Payload, &owner) != nil {
		// Not a payload of ours: treated as another workspace's.
		owner.WorkspaceID = "unknown"
	}
	return Task{ID: ti.ID, Queue: ti.Queue, Kind: ti.Type, State: state, Payload: payload,
		Retried: ti.Retried, MaxRetry: ti.MaxRetry, LastError: ti.LastErr, LastFailedAt: ti.LastFailedAt,
		NextProcessAt: ti.NextProcessAt, WorkspaceID: owner.WorkspaceID}
}
