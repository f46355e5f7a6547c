package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// mixState is what the agent's, the hosts' and the reviewers' verbs were
// acknowledged (under runState.mu).
type mixState struct {
	toolCalls     map[string]bool         // echo calls answered 201 completed, by call id
	toolCallsSent int                     // echo calls sent
	asked         map[string]string       // ask calls answered 201 pending_input: call id -> task id
	clicked       map[string]bool         // acknowledged clicks by call id
	claims        map[string]map[int]bool // claims answered (200, or named by the limit's 409): task id -> reviewers
	reviewLog     map[string][]string     // each reviewer's answers naming a task, in order: task id -> lines (the note of a task gone wrong)
	reviewed      map[string]bool         // acknowledged approvals of claimed tasks, by task id
	uploads       map[string]string       // acknowledged uploads: file id -> sha256 of what was sent
	uploadsSent   int                     // uploads sent
	replies       map[string]bool         // acknowledged final replies with an app block, by task id
	repliesSent   int                     // replies sent (one per task)
	stepOf        map[string]string       // the review workspace's parked tasks: task id -> app-tool step
}

// logReview records reviewer ri's answer a to verb on task (under
// runState.mu): when, from which api, its status and error.
func (m *mixState) logReview(task string, ri int, verb string, a answer) {
	line := fmt.Sprintf("%s reviewer %d %s: %d", a.at.Format("15:04:05.000"), ri, verb, a.status)
	if a.status == 0 {
		line = fmt.Sprintf("%s reviewer %d %s: no answer", time.Now().Format("15:04:05.000"), ri, verb)
	}
	if a.api != "" {
		line += " from " + a.api
	}
	if a.status != 200 && len(a.raw) > 0 {
		line += " " + strings.TrimSpace(string(a.raw[:min(len(a.raw), 300)]))
	}
	m.reviewLog[task] = append(m.reviewLog[task], line)
}

// settleFor bounds how long a verb the traffic began (a click on a card it
// got, the approval of a task it claimed) goes on after the traffic's end:
// a person finishes what they started.
const settleFor = 30 * time.Second

// toolEndpoint is the url target of the agent's tools: /echo answers its
// body as text, /ask a pending-input card whose button ok is the result.
type toolEndpoint struct {
	url string
	srv *http.Server
}

func startToolEndpoint() (*toolEndpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	card := models.MustJSON(agenttool.PendingInput{Type: agenttool.PendingInputType, Title: "Soak question",
		Elements: []agenttool.Button{{Type: agenttool.ButtonElementType, ID: askOK, Label: "OK", Input: json.RawMessage(`{"answer":"ok"}`)}}})
	e := &toolEndpoint{url: "http://" + ln.Addr().String()}
	e.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		switch req.URL.Path {
		case "/echo":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		case "/ask":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(card)
		default:
			http.NotFound(w, req)
		}
	})}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// mixTraffic starts the clients of the verbs beyond the data ones: the
// agent's echo tool calls; its ask tool calls, each on a new task, whose
// card a host then clicks; two reviewers claiming the review workspace's
// parked tasks (POST /api/review/next) and approving them; file uploads to
// a task; and final replies with an app block, each on a new task.
func (r *runState) mixTraffic(ctx context.Context, wg *sync.WaitGroup) {
	fx := r.d.fx
	m := &r.mix
	m.toolCalls, m.asked, m.clicked = map[string]bool{}, map[string]string{}, map[string]bool{}
	m.claims, m.reviewed, m.uploads, m.replies = map[string]map[int]bool{}, map[string]bool{}, map[string]string{}, map[string]bool{}
	m.reviewLog = map[string][]string{}
	m.stepOf = map[string]string{}
	for _, p := range fx.review.parked {
		m.stepOf[p.taskID] = p.stepID
	}
	locked := func(f func()) {
		r.mu.Lock()
		defer r.mu.Unlock()
		f()
	}
	type call struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}

	loop(ctx, wg, 100*time.Millisecond, func(i int) {
		a := r.client.call("tool-call", "POST", "/api/agent/tasks/"+fx.toolCallTask+"/tool-calls", fx.agentToken,
			map[string]any{"name": echoTool, "input": map[string]any{"i": i}})
		var c call
		locked(func() {
			m.toolCallsSent++
			if a.status == 201 && a.json(&c) == nil && c.Status == models.ToolCallCompleted {
				m.toolCalls[c.ID] = true
			}
		})
	})

	loop(ctx, wg, 300*time.Millisecond, func(i int) {
		task := r.newTask(ctx, fmt.Sprintf("soak ask %d", i))
		if task == "" {
			return
		}
		a := r.client.call("tool-call-ask", "POST", "/api/agent/tasks/"+task+"/tool-calls", fx.agentToken,
			map[string]any{"name": askTool, "input": map[string]any{"i": i}})
		var c call
		if a.status != 201 || a.json(&c) != nil || c.Status != models.ToolCallPendingInput {
			return
		}
		locked(func() { m.asked[c.ID] = task })
		if r.settle(func(unknown bool) (bool, answer) {
			a := r.client.call("click", "POST", "/api/tasks/"+task+"/tool-calls/"+c.ID+"/buttons/"+askOK, fx.hostToken, nil)
			return a.status == 200 || (a.status == 409 && unknown), a
		}) {
			locked(func() { m.clicked[c.ID] = true })
		}
	})

	for ri, tok := range fx.review.reviewerTokens {
		loop(ctx, wg, 500*time.Millisecond, func(int) {
			a := r.client.call("review-next", "POST", "/api/review/next", tok, nil)
			var out struct {
				Task *struct {
					TaskID string `json:"task_id"`
				} `json:"task"`
				HeldClaims []struct {
					TaskID string `json:"task_id"`
				} `json:"held_claims"`
			}
			taskID := ""
			switch {
			case a.status == 200 && a.json(&out) == nil && out.Task != nil:
				taskID = out.Task.TaskID
			case a.status == 409 && a.json(&out) == nil && len(out.HeldClaims) > 0:
				// A claim whose answer was lost: the limit names it.
				taskID = out.HeldClaims[0].TaskID
			default:
				time.Sleep(500 * time.Millisecond) // nothing to review, or refused
				return
			}
			locked(func() {
				if m.claims[taskID] == nil {
					m.claims[taskID] = map[int]bool{}
				}
				m.claims[taskID][ri] = true
				m.logReview(taskID, ri, "review-next", a)
			})
			settleCtx, cancel := context.WithTimeout(context.Background(), settleFor)
			defer cancel()
			session := r.mintAs(settleCtx, tok, m.stepOf[taskID])
			if session == "" {
				return
			}
			if r.settle(func(unknown bool) (bool, answer) {
				a := r.client.call("review-approve", "POST", "/api/app-runtime/action", session, map[string]any{"op": "approve",
					"payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "r-" + taskID}}}})
				locked(func() { m.logReview(taskID, ri, "review-approve", a) })
				return a.status == 200 || (a.status == 409 && unknown), a
			}) {
				locked(func() { m.reviewed[taskID] = true })
			}
		})
	}

	loop(ctx, wg, 250*time.Millisecond, func(i int) {
		content := fmt.Appendf(nil, "id,name\n%d,upload %d\n", i, i)
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		part, _ := mw.CreateFormFile("file", fmt.Sprintf("u-%d.csv", i))
		_, _ = part.Write(content)
		_ = mw.Close()
		a := r.client.send("upload", "POST", "/api/agent/tasks/"+fx.uploadTask+"/files", fx.agentToken, mw.FormDataContentType(), body.Bytes())
		var out struct {
			FileID string `json:"file_id"`
		}
		sum := sha256.Sum256(content)
		locked(func() {
			m.uploadsSent++
			if a.status == 201 && a.json(&out) == nil && out.FileID != "" {
				m.uploads[out.FileID] = hex.EncodeToString(sum[:])
			}
		})
	})

	wg.Add(1)
	go func() {
		defer wg.Done()
		asset := r.create(ctx, "asset", "/api/agent/assets", fx.agentToken, "text/html",
			[]byte("<!doctype html><html><body><p>soak app</p></body></html>"), "id")
		for i := 0; ctx.Err() == nil; i++ {
			task := r.newTask(ctx, fmt.Sprintf("soak reply %d", i))
			if task == "" {
				return
			}
			locked(func() { m.repliesSent++ })
			if r.settle(func(unknown bool) (bool, answer) {
				a := r.client.call("reply", "POST", "/api/agent/tasks/"+task+"/replies", fx.agentToken, map[string]any{"final": true, "blocks": []any{
					map[string]any{"type": "text", "text": "r-" + task},
					map[string]any{"type": "app", "asset_id": asset, "title": "Soak app", "fallback": "Open it on the web."}}})
				return a.status == 201 || (a.status == 409 && unknown), a
			}) {
				locked(func() { m.replies[task] = true })
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
}

// newTask creates a task as the agent, retrying refusals until ctx ends
// (a task whose answer was lost is left running, unused).
func (r *runState) newTask(ctx context.Context, title string) string {
	body, _ := json.Marshal(map[string]any{"title": title})
	return r.create(ctx, "task", "/api/agent/tasks", r.d.fx.agentToken, "application/json", body, "id")
}

// settle sends a request until it is acknowledged or refused for good, for
// at most settleFor: try(unknown) says whether its answer acknowledges it,
// unknown being whether an earlier attempt's answer was lost (a 409 then
// is that attempt's success).
func (r *runState) settle(try func(unknown bool) (bool, answer)) bool {
	deadline := time.Now().Add(settleFor)
	unknown := false
	for time.Now().Before(deadline) {
		ok, a := try(unknown)
		if ok {
			return true
		}
		if !retryable(a) {
			return false
		}
		unknown = unknown || a.status == 0
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// pushedEvents are the webhook events the platform owes (resume_event
// outbox rows) with their verified deliveries.
type pushedEvents struct {
	byTask    map[string][]webhook.Event
	delivered map[string]int // 2xx deliveries recorded, by event id
	// unanswered are the attempts recorded without an answer the platform
	// saw (unfinished: the worker was killed mid-POST; or no status), by
	// event id: each may have reached the receiver all the same.
	unanswered map[string]int
	received   func(id string) int
	// redelivered counts events the receiver got more than once where the
	// repeats are explained by unanswered attempts: delivery is at least
	// once (docs/agent-platforms.md#webhook-event-catalogue), not doubled.
	redelivered int
	// notes name every event counted lost, doubled or redelivered.
	notes []string
}

func loadEvents(db *gorm.DB, hook *receiver) (*pushedEvents, error) {
	var rows []models.Outbox
	if err := db.Select("id", "payload").Where("kind = ?", outbox.KindResumeEvent).Find(&rows).Error; err != nil {
		return nil, err
	}
	pe := &pushedEvents{byTask: map[string][]webhook.Event{}, delivered: map[string]int{}, unanswered: map[string]int{}, received: hook.count}
	for _, row := range rows {
		var ev webhook.Event
		if err := json.Unmarshal(row.Payload, &ev); err != nil {
			return nil, fmt.Errorf("outbox row %s: %w", row.ID, err)
		}
		ev.ID = row.ID
		pe.byTask[ev.TaskID] = append(pe.byTask[ev.TaskID], ev)
	}
	var counts []struct {
		EventID string
		N       int
	}
	if err := db.Model(&models.WebhookDelivery{}).Select("event_id, count(*) AS n").
		Where("status_code BETWEEN 200 AND 299").Group("event_id").Scan(&counts).Error; err != nil {
		return nil, err
	}
	for _, c := range counts {
		pe.delivered[c.EventID] = c.N
	}
	counts = counts[:0]
	if err := db.Model(&models.WebhookDelivery{}).Select("event_id, count(*) AS n").
		Where("finished_at IS NULL OR status_code = 0").Group("event_id").Scan(&counts).Error; err != nil {
		return nil, err
	}
	for _, c := range counts {
		pe.unanswered[c.EventID] = c.N
	}
	return pe, nil
}

// once checks that task has exactly one event of one of types (any type
// when nil; matching keep, when given) and that it was delivered, signed, once: lost and doubled counts.
// An event the receiver got again after an attempt whose answer the
// platform never saw (its worker killed mid-POST), with one 2xx recorded,
// is redelivered, not doubled: the platform promises at least once.
func (pe *pushedEvents) once(taskID string, types []string, keep func(webhook.Event) bool) (lost, doubled int) {
	var evs []webhook.Event
	for _, ev := range pe.byTask[taskID] {
		if (types == nil || slices.Contains(types, ev.Type)) && (keep == nil || keep(ev)) {
			evs = append(evs, ev)
		}
	}
	switch {
	case len(evs) == 0:
		pe.notes = append(pe.notes, fmt.Sprintf("lost: task %s has no %v event", taskID, types))
		return 1, 0
	case len(evs) > 1:
		pe.notes = append(pe.notes, fmt.Sprintf("doubled: task %s has %d %v events", taskID, len(evs), types))
		doubled++
	}
	for _, ev := range evs {
		ok, got, cut := pe.delivered[ev.ID], pe.received(ev.ID), pe.unanswered[ev.ID]
		what := ""
		switch {
		case ok == 0 || got == 0:
			lost++
			what = "lost"
		case ok == 1 && got > 1 && got <= 1+cut:
			pe.redelivered++
			what = "redelivered"
		case ok > 1 || got > 1:
			doubled++
			what = "doubled"
		default:
			continue
		}
		pe.notes = append(pe.notes, fmt.Sprintf("%s: task %s event %s (%s): 2xx recorded %d, unanswered attempts %d, received %d",
			what, taskID, ev.ID, ev.Type, ok, cut, got))
	}
	return lost, doubled
}

// dataOf reads a pushed event's data field key.
func dataOf(ev webhook.Event, key string) string {
	var d map[string]any
	_ = json.Unmarshal(ev.Data, &d)
	s, _ := d[key].(string)
	return s
}

// feedCounts counts feed rows of typ (on the given tasks) by the payload's
// value at path (a key, or keys into nested objects).
func feedCounts(db *gorm.DB, typ string, taskIDs []string, path ...string) (map[string]int, error) {
	out := map[string]int{}
	if len(taskIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		K string
		N int
	}
	err := db.Model(&models.FeedEvent{}).Select("(payload::jsonb)#>>?::text[] AS k, count(*) AS n", "{"+strings.Join(path, ",")+"}").
		Where("type = ? AND task_id IN ?", typ, taskIDs).Group("k").Scan(&rows).Error
	for _, r := range rows {
		out[r.K] = r.N
	}
	return out, err
}

// checkMix checks the mix's invariants (under r.mu).
func (r *runState) checkMix(ctx context.Context, db, data *gorm.DB, pe *pushedEvents, v *invariants) error {
	m, fx := &r.mix, r.d.fx
	reviewResume := []string{webhook.TaskResumed, webhook.TaskReleased}

	// Echo tool calls: completed, one tool_call feed row, one
	// tool_call.completed event delivered once; none left running.
	var calls []models.ToolCall
	if err := db.Where("task_id = ?", fx.toolCallTask).Find(&calls).Error; err != nil {
		return err
	}
	status := map[string]string{}
	stuck := 0
	for _, c := range calls {
		status[c.ID] = c.Status
		if c.Status == models.ToolCallRunning {
			stuck++
		}
	}
	feed, err := feedCounts(db, models.FeedToolCall, []string{fx.toolCallTask}, "tool_call_id")
	if err != nil {
		return err
	}
	lost, doubled := 0, max(len(calls)-m.toolCallsSent, 0)
	for id := range m.toolCalls {
		l, d := pe.once(fx.toolCallTask, []string{webhook.ToolCallCompleted}, func(ev webhook.Event) bool { return dataOf(ev, "tool_call_id") == id })
		if status[id] != models.ToolCallCompleted || feed[id] == 0 {
			l++
		}
		if feed[id] > 1 {
			d++
		}
		lost, doubled = lost+l, doubled+d
	}
	v.add(fmt.Sprintf("agent tool call: completed, 1 feed row, 1 signed event (%d sent)", m.toolCallsSent), len(m.toolCalls), lost, doubled, stuck)

	// Pending-input clicks: the call completed by the button, its await
	// released once, one click feed row, one input.answered and one resume
	// event, each delivered once. A card the traffic got and never got
	// answered is stuck.
	askTasks := make([]string, 0, len(m.asked))
	for _, t := range m.asked {
		askTasks = append(askTasks, t)
	}
	clicks, err := feedCounts(db, models.FeedToolCallClick, askTasks, "tool_call_id")
	if err != nil {
		return err
	}
	lost, doubled, stuck = 0, 0, 0
	for id, task := range m.asked {
		if !m.clicked[id] {
			stuck++
			continue
		}
		var c models.ToolCall
		if err := db.Where("id = ?", id).Take(&c).Error; err != nil {
			return err
		}
		var released int64
		if err := db.Model(&models.TaskAwait{}).Where("task_id = ? AND source_type = ? AND status <> ?", task, models.AwaitSourceToolCall, models.AwaitPending).
			Count(&released).Error; err != nil {
			return err
		}
		l1, d1 := pe.once(task, []string{webhook.InputAnswered}, nil)
		l2, d2 := pe.once(task, reviewResume, nil)
		lost, doubled = lost+l1+l2, doubled+d1+d2
		if c.Status != models.ToolCallCompleted || released == 0 || clicks[id] == 0 {
			lost++
		}
		if released > 1 || clicks[id] > 1 {
			doubled++
		}
	}
	v.add(fmt.Sprintf("pending-input click answered once, input.answered + resume (%d cards)", len(m.asked)), len(m.clicked), lost, doubled, stuck)

	// Review claims: each claimed task handed to one reviewer only, approved
	// once (one decision row, its await resolved, one resume event delivered
	// once); a claimed task left pending is stuck.
	lost, doubled, stuck = 0, 0, 0
	for task, who := range m.claims {
		if len(who) > 1 {
			doubled++
		}
		var aw models.TaskAwait
		if err := db.Where("task_id = ? AND source_type = ?", task, models.AwaitSourceAppTool).Take(&aw).Error; err != nil {
			return err
		}
		if aw.Status == models.AwaitPending {
			stuck++
			v.notes = append(v.notes, fmt.Sprintf("review claim: task %s: still pending, claimed by %d reviewers; its answers:\n    %s",
				task, len(who), strings.Join(m.reviewLog[task], "\n    ")))
			continue
		}
		var n int64
		if err := data.Raw(`SELECT count(*) FROM decisions WHERE decision = ?`, "r-"+task).Scan(&n).Error; err != nil {
			return err
		}
		l, d := pe.once(task, reviewResume, nil)
		if n == 0 {
			l++
		} else if n > 1 {
			d++
		}
		if n != 1 || len(who) > 1 {
			v.notes = append(v.notes, fmt.Sprintf("review claim: task %s: %d decision rows, claimed by %d reviewers; its answers:\n    %s",
				task, n, len(who), strings.Join(m.reviewLog[task], "\n    ")))
		}
		lost, doubled = lost+l, doubled+d
	}
	v.add(fmt.Sprintf("review claim: 1 reviewer, approved once (%d approved of %d)", len(m.reviewed), len(fx.review.parked)), len(m.claims), lost, doubled, stuck)

	// Uploads: each acknowledged file's row and blob, with the sha of what
	// was sent; no more rows than uploads sent.
	var files []models.File
	if err := db.Where("task_id = ?", fx.uploadTask).Find(&files).Error; err != nil {
		return err
	}
	byID := map[string]models.File{}
	for _, f := range files {
		byID[f.ID] = f
	}
	blobs := storage.NewDatabase(db)
	lost = 0
	for id, sum := range m.uploads {
		f, ok := byID[id]
		if !ok {
			lost++
			continue
		}
		b, err := blobs.Get(ctx, f.StorageKey)
		got := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(got[:]) != sum {
			lost++
		}
	}
	v.add(fmt.Sprintf("acknowledged upload: its row and blob, same sha256 (%d sent)", m.uploadsSent), len(m.uploads), lost, max(len(files)-m.uploadsSent, 0), 0)

	// Replies: one stored reply with its app block, one reply feed row, one
	// reply.stored event delivered once, the task completed.
	replyTasks := make([]string, 0, len(m.replies))
	for t := range m.replies {
		replyTasks = append(replyTasks, t)
	}
	stored, err := countByTask(db, &models.TaskReply{}, replyTasks, "")
	if err != nil {
		return err
	}
	feedRows, err := countByTask(db, &models.FeedEvent{}, replyTasks, models.FeedReply)
	if err != nil {
		return err
	}
	lost, doubled = 0, 0
	for _, task := range replyTasks {
		var t models.Task
		if err := db.Select("status").Where("id = ?", task).Take(&t).Error; err != nil {
			return err
		}
		l, d := pe.once(task, []string{webhook.ReplyStored}, nil)
		if stored[task] == 0 || feedRows[task] == 0 || t.Status != models.TaskCompleted {
			l++
		}
		if stored[task] > 1 || feedRows[task] > 1 {
			d++
		}
		lost, doubled = lost+l, doubled+d
	}
	v.add(fmt.Sprintf("app-block reply stored once, feed row, reply.stored (%d sent)", m.repliesSent), len(m.replies), lost, doubled, 0)
	return nil
}

// countByTask counts rows of model by task_id (of type typ when given).
func countByTask(db *gorm.DB, model any, taskIDs []string, typ string) (map[string]int, error) {
	out := map[string]int{}
	if len(taskIDs) == 0 {
		return out, nil
	}
	q := db.Model(model).Select("task_id, count(*) AS n").Where("task_id IN ?", taskIDs)
	if typ != "" {
		q = q.Where("type = ?", typ)
	}
	var rows []struct {
		TaskID string
		N      int
	}
	err := q.Group("task_id").Scan(&rows).Error
	for _, r := range rows {
		out[r.TaskID] = r.N
	}
	return out, err
}
