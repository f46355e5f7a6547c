package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// ack is which api acknowledged a request, and when.
type ack struct {
	api string
	at  time.Time
}

// killAckWindow is how long before its api's kill -9 a /write's
// acknowledgement may come and its feed row not be committed yet: the row
// follows the reply within milliseconds (5 ms of linger on a busy api), a
// few hundred on a loaded machine.
const killAckWindow = time.Second

// ackedJustBeforeKill says whether a came from the api killed with kill -9,
// at most killAckWindow before the kill.
func (d *deployment) ackedJustBeforeKill(a ack) bool {
	d.faultLog.mu.Lock()
	defer d.faultLog.mu.Unlock()
	before := d.killedAPIAt.Sub(a.at)
	return d.killedAPI != "" && a.api == d.killedAPI && before >= 0 && before <= killAckWindow
}

// unknownOwnerGone counts task's agent_action_unknown feed rows whose
// reason is the writing process's end (intent.ReasonOwnerGone), by decision.
func unknownOwnerGone(db *gorm.DB, task string) (map[string]int, error) {
	out := map[string]int{}
	var rows []struct {
		K string
		N int
	}
	err := db.Model(&models.FeedEvent{}).Select("(payload::jsonb)#>>'{intended,row,decision}' AS k, count(*) AS n").
		Where("type = ? AND task_id = ? AND (payload::jsonb)->>'reason' = ?", models.FeedAgentActionUnknown, task, intent.ReasonOwnerGone).
		Group("k").Scan(&rows).Error
	for _, r := range rows {
		out[r.K] = r.N
	}
	return out, err
}

// runState is what the traffic was acknowledged, for the checks.
type runState struct {
	d      *deployment
	client *client
	stats  *stats

	mu       sync.Mutex
	acked    map[string]bool // acknowledged writes by decision
	ackedBy  map[string]ack  // which api acknowledged each, and when
	sentW    int
	approved map[string]bool // acknowledged approvals by task id
	runSent  map[string]int  // /run requests by step
	runOK    map[string]int  // answered 200 by step
	mix      mixState        // the agent's, the hosts' and the reviewers' verbs (mix.go)
}

// mint mints a session for step through the host API, retrying refusals.
func (r *runState) mint(ctx context.Context, step string) string {
	return r.mintAs(ctx, r.d.fx.hostToken, step)
}

// mintAs is mint with the host token of a given user.
func (r *runState) mintAs(ctx context.Context, hostToken, step string) string {
	body, _ := json.Marshal(map[string]string{"step_id": step})
	return r.create(ctx, "mint", "/api/app-tools/sessions", hostToken, "application/json", body, "session_token")
}

// create POSTs payload to path until it is created (201) or ctx ends, and
// returns the answer's field ("" when ctx ended first).
func (r *runState) create(ctx context.Context, verb, path, token, contentType string, payload []byte, field string) string {
	for ctx.Err() == nil {
		a := r.client.send(verb, "POST", path, token, contentType, payload)
		var out map[string]any
		if a.status == 201 && a.json(&out) == nil {
			if s, _ := out[field].(string); s != "" {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}

// pythonWait is how long the python /run client waits for an answer.
const pythonWait = 20 * time.Second

// loop runs f(0), f(1), … with pause between calls until ctx ends.
func loop(ctx context.Context, wg *sync.WaitGroup, pause time.Duration, f func(i int)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			f(i)
			time.Sleep(pause)
		}
	}()
}

// traffic starts the clients: writes and reads on one session, mints, /run
// of the CSV lookup tool and of the python tool, approvals of the parked
// tasks spread over the run, and the mix of mix.go (agent tool calls,
// pending-input clicks, review claims, file uploads, app-block replies).
func (r *runState) traffic(ctx context.Context, wg *sync.WaitGroup) {
	loop := func(pause time.Duration, f func(i int)) { loop(ctx, wg, pause, f) }
	token := r.mint(ctx, r.d.fx.writeStep)
	loop(20*time.Millisecond, func(i int) {
		d := fmt.Sprintf("w-%d", i)
		a := r.client.call("write", "POST", "/api/app-runtime/write", token,
			map[string]any{"op": "record_decision", "payload": map[string]any{"row": map[string]any{"decision": d}}})
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sentW++
		if a.status == 200 {
			r.acked[d] = true
			r.ackedBy[d] = ack{api: a.api, at: a.at}
		}
	})
	loop(20*time.Millisecond, func(i int) {
		r.client.call("read", "POST", "/api/app-runtime/read", token,
			map[string]any{"op": "list_invoices", "payload": map[string]any{"filters": map[string]any{"id": 1 + i%100}}})
	})
	loop(250*time.Millisecond, func(int) {
		r.client.call("mint", "POST", "/api/app-tools/sessions", r.d.fx.hostToken, map[string]string{"step_id": r.d.fx.mintStep})
	})
	runner := func(verb, step string, pause, within time.Duration, body func(i int) map[string]any) {
		runToken := r.mint(ctx, step)
		loop(pause, func(i int) {
			r.mu.Lock()
			r.runSent[step]++
			r.mu.Unlock()
			if a := r.client.callWithin(within, verb, "POST", "/api/app-runtime/run", runToken, body(i)); a.status == 200 {
				r.mu.Lock()
				r.runOK[step]++
				r.mu.Unlock()
			}
		})
	}
	for _, step := range r.d.fx.runSteps {
		runner("run", step, 50*time.Millisecond, 0, func(i int) map[string]any {
			return map[string]any{"op": "lookup",
				"payload": map[string]any{"match_criteria": map[string]any{"id": fmt.Sprint(1 + i%csvRows)}, "return_columns": []string{"name"}}}
		})
	}
	for _, step := range r.d.fx.pyRunSteps {
		// A python run's deadline is 15 minutes (jobs.ScriptDeadline): the
		// client gives up after pythonWait, a cut counted in the table.
		runner("run-python", step, 100*time.Millisecond, pythonWait, func(i int) map[string]any {
			return map[string]any{"op": "double", "payload": map[string]any{"n": i}}
		})
	}
	r.mixTraffic(ctx, wg)
	// Approvals: one parked task after another, each retried until it is
	// acknowledged (a 409 after an attempt whose answer was lost is the
	// earlier attempt's success).
	wg.Add(1)
	go func() {
		defer wg.Done()
		every := r.d.o.duration / time.Duration(len(r.d.fx.approvals)+1)
		for _, p := range r.d.fx.approvals {
			t0 := time.Now()
			tok := r.mint(ctx, p.stepID)
			unknown := false
			for ctx.Err() == nil {
				a := r.client.call("approve", "POST", "/api/app-runtime/action", tok, map[string]any{"op": "approve",
					"payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "a-" + p.taskID}}}})
				if a.status == 200 || (a.status == 409 && unknown) {
					r.mu.Lock()
					r.approved[p.taskID] = true
					r.mu.Unlock()
					break
				}
				if !retryable(a) {
					break
				}
				unknown = unknown || a.status == 0
				time.Sleep(200 * time.Millisecond)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every - time.Since(t0)):
			}
		}
	}()
}

// invariants are the checks' counts.
type invariants struct {
	lost, doubled, stuck int
	lines                []string
	notes                []string // what each lost, doubled or redelivered item was
}

func (v *invariants) add(name string, checked, lost, doubled, stuck int) {
	v.lost += lost
	v.doubled += doubled
	v.stuck += stuck
	v.lines = append(v.lines, fmt.Sprintf("%-70s %6d %5d %7d %5d", name, checked, lost, doubled, stuck))
}

func (v *invariants) print(w io.Writer) {
	fmt.Fprintf(w, "%-70s %6s %5s %7s %5s\n", "invariant (from the databases)", "count", "lost", "doubled", "stuck")
	for _, l := range v.lines {
		fmt.Fprintln(w, l)
	}
	for _, n := range v.notes {
		fmt.Fprintln(w, n)
	}
}

// check waits for owed work to settle (every outbox row done, every
// expiry due resolved, every approval delivered), at most o.drain, then
// checks the invariants from the platform's and the data source's
// databases.
func (r *runState) check(ctx context.Context) (*invariants, error) {
	st, err := store.Open(ctx, r.d.dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	data, err := store.Open(ctx, r.d.dataURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return nil, err
	}
	defer data.Close()
	db := st.DB.WithContext(ctx)
	fx := r.d.fx
	r.mu.Lock()
	defer r.mu.Unlock()

	deadline := time.Now().Add(r.d.o.drain)
	for time.Now().Before(deadline) {
		var open, pending int64
		db.Model(&models.Outbox{}).Where("done_at IS NULL").Count(&open)
		db.Model(&models.Step{}).Joins("JOIN tasks ON tasks.id = steps.task_id").
			Where("tasks.workspace_id = ? AND steps.status = ?", fx.workspaceID, models.StepRunning).Count(&pending)
		if open == 0 && pending == 0 {
			break
		}
		time.Sleep(time.Second)
	}
	v := &invariants{}

	// Writes: every acknowledged one is in the data source once, and each
	// write applied has one feed row.
	var decisions []struct {
		Decision string
		N        int
	}
	if err := data.DB.WithContext(ctx).Raw(`SELECT decision, count(*) AS n FROM decisions WHERE decision LIKE 'w-%' GROUP BY decision`).
		Scan(&decisions).Error; err != nil {
		return nil, err
	}
	applied := map[string]int{}
	doubled := 0
	for _, d := range decisions {
		applied[d.Decision] = d.N
		if d.N > 1 {
			doubled++
		}
	}
	lost := 0
	for d := range r.acked {
		if applied[d] == 0 {
			lost++
		}
	}
	v.add(fmt.Sprintf("acknowledged /write applied once (%d sent)", r.sentW), len(r.acked), lost, doubled, 0)
	var writeTask string
	if err := db.Model(&models.Step{}).Where("id = ?", fx.writeStep).Pluck("task_id", &writeTask).Error; err != nil {
		return nil, err
	}
	// Each applied write's feed row, matched by its decision: agent_action
	// (what was written), or agent_action_unknown where the platform cannot
	// know the outcome (a write whose api was killed under it), which is
	// its record only when the write was not acknowledged, or was
	// acknowledged by the api killed with kill -9 within killAckWindow
	// before the kill and recorded as its owner's gone: a /write's feed row
	// is committed just after its reply (docs/architecture.md#the-write-guarantee),
	// so a kill in between leaves the intent to the sweep. Any other
	// acknowledged one is a lost row (the feed tells the reviewer less than
	// the agent was told).
	recorded, err := feedCounts(db, models.FeedAgentAction, []string{writeTask}, "row", "decision")
	if err != nil {
		return nil, err
	}
	unknown, err := feedCounts(db, models.FeedAgentActionUnknown, []string{writeTask}, "intended", "row", "decision")
	if err != nil {
		return nil, err
	}
	ownerGone, err := unknownOwnerGone(db, writeTask)
	if err != nil {
		return nil, err
	}
	lostFeed, extraFeed, unknowns, killedAcks := 0, 0, 0, 0
	for d := range applied {
		switch {
		case recorded[d] > 1:
			extraFeed++
		case recorded[d] == 1:
		case unknown[d] > 0 && !r.acked[d]:
			unknowns++
		case unknown[d] > 0 && ownerGone[d] == unknown[d] && r.d.ackedJustBeforeKill(r.ackedBy[d]):
			killedAcks++
			v.notes = append(v.notes, fmt.Sprintf("write %s: acknowledged by %s %s before its kill -9, recorded as outcome unknown (its owner gone)",
				d, r.ackedBy[d].api, r.d.killedAPIAt.Sub(r.ackedBy[d].at).Round(time.Millisecond)))
		default:
			lostFeed++
			v.notes = append(v.notes, fmt.Sprintf("write %s: applied, acknowledged %t, %d agent_action and %d unknown rows", d, r.acked[d], recorded[d], unknown[d]))
		}
	}
	v.add(fmt.Sprintf("applied /write has its agent_action row (%d not acknowledged, %d acknowledged just before a kill -9: unknown)", unknowns, killedAcks),
		len(decisions), lostFeed, extraFeed, 0)

	// Approvals: one resume event each and one verified 2xx delivery.
	pe, err := loadEvents(db, r.d.hook)
	if err != nil {
		return nil, err
	}
	var aLost, aDoubled int
	for _, p := range fx.approvals {
		if !r.approved[p.taskID] {
			continue
		}
		l, d := pe.once(p.taskID, nil, nil)
		var n int64
		if err := data.DB.WithContext(ctx).Raw(`SELECT count(*) FROM decisions WHERE decision = ?`, "a-"+p.taskID).Scan(&n).Error; err != nil {
			return nil, err
		}
		if n == 0 {
			l++
		} else if n > 1 {
			d++
		}
		if n != 1 {
			v.notes = append(v.notes, fmt.Sprintf("approval: task %s: %d decision rows", p.taskID, n))
		}
		aLost, aDoubled = aLost+l, aDoubled+d
	}
	v.add(fmt.Sprintf("approval: 1 row, 1 resume event, 1 signed 2xx webhook (of %d)", len(fx.approvals)), len(r.approved), aLost, aDoubled, 0)

	// /run: each left at most one step (tool_run) on its surface.
	for _, run := range []struct {
		name  string
		steps []string
		kind  string // the step kind a run of its base tool leaves
	}{{"/run (CSV lookup)", fx.runSteps, runStepKind(models.BaseCSVLookup)}, {"/run (python)", fx.pyRunSteps, runStepKind(models.BasePythonCode)}} {
		var rLost, rDoubled, sent, ok int
		for _, step := range run.steps {
			var steps int64
			if err := db.Model(&models.Step{}).Where("parent_step_id = ? AND kind = ?", step, run.kind).Count(&steps).Error; err != nil {
				return nil, err
			}
			sent, ok = sent+r.runSent[step], ok+r.runOK[step]
			if int(steps) > r.runSent[step] {
				rDoubled += int(steps) - r.runSent[step]
			}
			if int(steps) < r.runOK[step] {
				rLost += r.runOK[step] - int(steps)
			}
		}
		v.add(fmt.Sprintf("%s answered 200 left its step, none two (%d sent)", run.name, sent), ok, rLost, rDoubled, 0)
	}

	// Expiries due before now: resolved as expired once, with one event.
	var eLost, eDoubled, eStuck, due int
	for _, p := range fx.expiries {
		if p.due.After(time.Now()) {
			continue
		}
		due++
		var aw models.TaskAwait
		if err := db.Where("id = ?", p.awaitID).Take(&aw).Error; err != nil {
			return nil, err
		}
		if aw.Status == models.AwaitPending {
			eStuck++
			continue
		}
		if aw.Reason != review.ReasonExpired {
			eLost++
		}
		l, d := pe.once(p.taskID, nil, nil)
		eLost, eDoubled = eLost+l, eDoubled+d
	}
	v.add("due await expiry happened once (resume event, webhook)", due, eLost, eDoubled, eStuck)

	// Nothing stuck: no step left running, no owed outbox row undone.
	var running, open int64
	if err := db.Model(&models.Step{}).Joins("JOIN tasks ON tasks.id = steps.task_id").
		Where("tasks.workspace_id = ? AND steps.status = ?", fx.workspaceID, models.StepRunning).Count(&running).Error; err != nil {
		return nil, err
	}
	if err := db.Model(&models.Outbox{}).Where("done_at IS NULL").Count(&open).Error; err != nil {
		return nil, err
	}
	var tasks int64
	if err := db.Model(&models.Task{}).Where("workspace_id = ?", fx.workspaceID).Count(&tasks).Error; err != nil {
		return nil, err
	}
	if err := r.checkMix(ctx, db, data.DB.WithContext(ctx), pe, v); err != nil {
		return nil, err
	}
	v.add("no step running, no outbox row owed after the drain", int(tasks), 0, 0, int(running+open))
	r.d.hook.mu.Lock()
	bad := r.d.hook.bad
	r.d.hook.mu.Unlock()
	v.add("webhook deliveries failing signature verification", bad, bad, 0, 0)
	v.add("webhook event received again after an unanswered attempt (at least once)", pe.redelivered, 0, 0, 0)
	v.notes = append(v.notes, pe.notes...)
	return v, nil
}

// runStepKind is the kind of step a /run of baseTool leaves.
func runStepKind(baseTool string) string {
	if row, _ := basetool.Lookup(baseTool); row.RunStepKind != "" {
		return row.RunStepKind
	}
	return models.StepToolRun
}
