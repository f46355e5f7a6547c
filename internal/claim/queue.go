package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// Duration is how long handing a parked task to a reviewer holds it
// for them (seed 000, next_review_task): long enough to finish a review,
// short enough that an abandoned one goes back to the queue soon.
const Duration = 20 * time.Minute

// Queue hands parked tasks to reviewers (POST /api/review/next): a task
// whose app-tool await is pending, assigned to the reviewer first, then the
// highest priority (the agent's priority_field key detail, copied onto
// tasks.priority by the summary pass), then the oldest. Handing over claims
// the task for Duration and assigns it; concurrent reviewers get
// different tasks (FOR UPDATE SKIP LOCKED). A claim whose time passed is
// free again whether or not the worker's sweep has cleared it yet
// (ClearExpired only tidies the row).
// It is safe for concurrent use.
type Queue struct {
	store    *store.Store
	claimSQL string // claimSQL in this dialect (locking clause, parameters)
	abortSQL string // abortSQL in this dialect
	heldSQL  string // heldSQL in this dialect
	lockSQL  string // lockReviewerSQL on Postgres; "" on SQLite, which serialises writers
	claimFor time.Duration
	now      func() time.Time
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	Store *store.Store
	// ClaimFor is how long a claim holds; zero is Duration (tests
	// shorten it).
	ClaimFor time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewQueue returns a Queue.
func NewQueue(o QueueOptions) *Queue {
	q := &Queue{store: o.Store, claimFor: o.ClaimFor, now: o.Now}
	q.claimSQL, q.abortSQL, q.heldSQL = fmt.Sprintf(claimSQL, ""), abortSQL, heldSQL
	if o.Store.Dialect == config.Postgres {
		q.claimSQL = fmt.Sprintf(claimSQL, " FOR UPDATE OF t, a SKIP LOCKED")
		q.lockSQL = lockReviewerSQL
	} else {
		// SQLite numbers its parameters ?N.
		q.claimSQL, q.abortSQL = strings.ReplaceAll(q.claimSQL, "$", "?"), strings.ReplaceAll(q.abortSQL, "$", "?")
		q.heldSQL = strings.ReplaceAll(q.heldSQL, "$", "?")
	}
	if q.claimFor <= 0 {
		q.claimFor = Duration
	}
	if q.now == nil {
		q.now = time.Now
	}
	return q
}

// ClaimFor is how long this queue's claims hold.
func (q *Queue) ClaimFor() time.Duration { return q.claimFor }

// ReviewClaim is a parked task handed to a reviewer: the task, the await it
// is parked on and its app-tool step (what the host mints a session on).
type ReviewClaim struct {
	TaskID         string    `json:"task_id"`
	AgentID        string    `json:"agent_id"`
	Title          string    `json:"title"`
	StepID         string    `json:"step_id"`
	AwaitID        string    `json:"await_id"`
	Priority       float64   `json:"priority"`
	ClaimedBy      string    `json:"claimed_by"`
	AssignedTo     string    `json:"assigned_to"`
	ClaimExpiresAt time.Time `json:"claim_expires_at"`
	CreatedAt      time.Time `json:"created_at"`
}

// claimSQL claims one claimable parked task of a workspace in one
// statement (one round trip): waiting for input with a pending app-tool
// await, not under a live claim, the first in queue order among the tasks
// assigned to the reviewer, else among those routed to them (a task that
// took review pools when it was parked goes to those pools' members only;
// one without pools to anyone of the workspace). The reviewer's live claims
// must stay under the workspace's review_claim_limit: the count is a
// one-time filter, so over the limit the statement claims nothing and reads
// no candidate. Arguments: $1 the reviewer, $2 the claim's end, $3 the
// workspace, $4 now. The assigned-to-me candidates are read through the
// partial indexes of migration 0010 (unclaimed tasks by assignee, claims by
// assignee and end: one BitmapOr that never meets the entries of live or
// released claims), the others in queue order through tasks_review_queue
// (0007). UNION ALL under LIMIT 1 runs its branches in order and stops at
// the first row, so the second runs only when the reviewer has nothing
// assigned. On Postgres each candidate task is locked with its pending
// await (FOR UPDATE OF t, a SKIP LOCKED), so concurrent claims pass over
// each other's rows instead of waiting for them (a locking clause rules out
// a parallel plan, which could reorder the branches), and a row another
// transaction changed since the statement's snapshot is rechecked as it is
// now, the await's status included: with the await read in an EXISTS
// only, a task another reviewer claimed and approved while this statement
// ran passed the recheck (its claim cleared again) on the snapshot's
// pending await and was handed over a second time
// (TestATaskSettledDuringAClaimIsNotHandedOver). Next holds the reviewer's advisory lock around it so that
// two of their own requests count each other's claims; SQLite serialises
// writers. RETURNING reads the claimed task's oldest pending await with it.
const claimSQL = `UPDATE tasks SET claimed_by = $1, claim_expires_at = $2, assigned_to = $1
WHERE (` + heldCountSQL + `) < (SELECT w.review_claim_limit FROM workspaces w WHERE w.id = $3)
  AND id = (SELECT id FROM (` + claimCandidateSQL + ` AND t.assigned_to = $1` + claimOrderSQL + `) mine
  UNION ALL SELECT id FROM (` + claimCandidateSQL + claimRoutedSQL + claimOrderSQL + `) anyone
  LIMIT 1)
RETURNING id, agent_id, title, priority, created_at,
  (SELECT a.id FROM task_awaits a WHERE a.task_id = tasks.id AND a.status = 'pending' AND a.source_type = 'app_tool'
   ORDER BY a.created_at LIMIT 1) AS await_id,
  (SELECT a.correlation_key FROM task_awaits a WHERE a.task_id = tasks.id AND a.status = 'pending' AND a.source_type = 'app_tool'
   ORDER BY a.created_at LIMIT 1) AS step_id`

// heldCountSQL counts the live claims reviewer $1 holds in workspace $3 at
// $4, through the claims index of migration 0010 (a claim sets assigned_to
// to its holder).
const heldCountSQL = `SELECT count(*) FROM tasks h WHERE h.assigned_to = $1 AND h.claimed_by = $1 AND h.workspace_id = $3
    AND h.status = 'waiting_for_input' AND h.claim_expires_at > $4`

// claimCandidateSQL selects the claimable tasks of workspace $3 at $4,
// joined to their pending app-tool awaits (a row per await, for the lock);
// claimRoutedSQL keeps those routed to reviewer $1 (no pools, or one of
// theirs); claimOrderSQL takes the first in queue order and, on Postgres,
// locks it (%s: the locking clause). A task assigned to the reviewer is
// theirs whatever its pools: an assignment names the person.
const (
	claimCandidateSQL = `SELECT t.id FROM tasks t
    JOIN task_awaits a ON a.task_id = t.id AND a.status = 'pending' AND a.source_type = 'app_tool'
    WHERE t.workspace_id = $3 AND t.status = 'waiting_for_input'
      AND (t.claim_expires_at IS NULL OR t.claim_expires_at <= $4)`
	claimRoutedSQL = `
      AND (NOT EXISTS (SELECT 1 FROM task_review_pools tp WHERE tp.task_id = t.id)
        OR EXISTS (SELECT 1 FROM task_review_pools tp JOIN review_pool_members m ON m.pool_id = tp.pool_id
          WHERE tp.task_id = t.id AND m.user_id = $1))`
	claimOrderSQL = `
    ORDER BY t.priority DESC, t.created_at, t.id LIMIT 1%[1]s`
)

// heldSQL lists the live claims reviewer $2 holds in workspace $1 at $3,
// with the workspace's limit, for the 409 that names them.
const heldSQL = `SELECT t.id, t.title, t.claim_expires_at, w.review_claim_limit FROM workspaces w
  LEFT JOIN tasks t ON t.workspace_id = w.id AND t.assigned_to = $2 AND t.claimed_by = $2
    AND t.status = 'waiting_for_input' AND t.claim_expires_at > $3
  WHERE w.id = $1 ORDER BY t.claim_expires_at, t.id`

// lockReviewerSQL takes reviewer $1's transaction-scoped advisory lock on
// Postgres: two review/next of one reviewer run one after the other, so the
// second counts the first's claim (READ COMMITTED takes a new snapshot per
// statement, after the lock is granted).
const lockReviewerSQL = `SELECT pg_advisory_xact_lock(hashtextextended('appruntime.review_claim:' || $1, 0))`

// abortSQL drops the live claim of reviewer $3 on task $1 of workspace $2
// at $4, and its assignment.
const abortSQL = `UPDATE tasks SET claimed_by = NULL, claim_expires_at = NULL, assigned_to = NULL, updated_at = $4
WHERE id = $1 AND workspace_id = $2 AND claimed_by = $3 AND claim_expires_at > $4`

// HeldClaim is a live claim a reviewer holds, as the 409 of a review/next
// over the claim limit names it.
type HeldClaim struct {
	TaskID         string    `json:"task_id"`
	Title          string    `json:"title"`
	ClaimExpiresAt time.Time `json:"claim_expires_at"`
}

// ClaimLimitReached is the code of the 409 review/next answers when the
// reviewer already holds the workspace's review_claim_limit live claims;
// the error's Detail carries it as "code", with "claim_limit" and
// "held_claims" (docs/admins.md#review-pools-and-the-claim-limit).
const ClaimLimitReached = "claim_limit_reached"

// Next claims the next task for reviewer userID of workspaceID, or returns
// nil when nothing is waiting for them: first among the tasks assigned to
// them, then among those routed to their review pools (or to no pool). A
// reviewer who already holds the workspace's claim limit gets a conflict
// naming the claims they hold; their own concurrent requests never pass the
// limit together.
func (q *Queue) Next(ctx context.Context, workspaceID, userID string) (*ReviewClaim, error) {
	if !models.IsID(userID) {
		return nil, apperr.Forbiddenf("the review queue needs a reviewer: use a host token issued for a user")
	}
	now := q.now().UTC()
	// Postgres keeps microseconds: the answer shows the stored value.
	expires := now.Add(q.claimFor).Truncate(time.Microsecond)
	claim, batched, err := q.claimBatched(ctx, workspaceID, userID, now, expires)
	if batched && err == nil && claim == nil {
		// Nothing claimed: at the limit, or nothing waits. Read after the
		// batch committed, so it counts the claims the lock waited for.
		err = q.overLimit(ctx, q.pool(), workspaceID, userID, now)
	}
	if !batched {
		err = q.store.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			pool := tx.Statement.ConnPool
			if q.lockSQL != "" {
				if _, err := pool.ExecContext(ctx, q.lockSQL, userID); err != nil {
					return fmt.Errorf("claim: lock reviewer %s: %w", userID, err)
				}
			}
			var err error
			if claim, err = q.claimNext(ctx, pool, workspaceID, userID, now, expires); err != nil || claim != nil {
				return err
			}
			return q.overLimit(ctx, pool, workspaceID, userID, now)
		})
	}
	if err != nil {
		return nil, err
	}
	return claim, nil
}

// claimBatched claims on Postgres in one round trip: the reviewer's lock
// and claimSQL go as one pgx batch, which Postgres runs as one implicit
// transaction (one Sync: the lock is held until the claim commits), each
// statement on a snapshot of its own, so the claim counts the claims the
// lock waited for. The transaction Next otherwise runs costs four round
// trips (BEGIN, the lock, the claim, COMMIT) for the same
// (docs/performance.md#the-bench). batched is false where there is no pgx
// connection to batch on (SQLite, a test's transaction): Next then runs
// the transaction.
func (q *Queue) claimBatched(ctx context.Context, workspaceID, userID string, now, expires time.Time) (claim *ReviewClaim, batched bool, err error) {
	db, ok := q.pool().(*sql.DB)
	if !ok || q.lockSQL == "" {
		return nil, false, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, true, fmt.Errorf("claim: claim next task: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(driverConn any) error {
		pc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return errNotPgx
		}
		b := &pgx.Batch{}
		b.Queue(q.lockSQL, userID)
		b.Queue(q.claimSQL, userID, expires, workspaceID, now)
		res := pc.Conn().SendBatch(ctx, b)
		claim, err = scanBatchedClaim(res, userID, expires)
		return errors.Join(err, res.Close())
	})
	if errors.Is(err, errNotPgx) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("claim: claim next task: %w", err)
	}
	return claim, true, nil
}

// errNotPgx: the pool's driver is not pgx's.
var errNotPgx = errors.New("claim: not a pgx connection")

// scanBatchedClaim reads claimBatched's two results: the lock's, then the
// claimed task (nil when none was claimed).
func scanBatchedClaim(res pgx.BatchResults, userID string, expires time.Time) (*ReviewClaim, error) {
	if _, err := res.Exec(); err != nil {
		return nil, fmt.Errorf("lock reviewer %s: %w", userID, err)
	}
	claim := &ReviewClaim{ClaimedBy: userID, AssignedTo: userID, ClaimExpiresAt: expires}
	var awaitID, stepID pgtype.Text
	err := res.QueryRow().Scan(&claim.TaskID, &claim.AgentID, &claim.Title, &claim.Priority, &claim.CreatedAt, &awaitID, &stepID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	claim.CreatedAt = claim.CreatedAt.UTC()
	if awaitID.Valid && stepID.Valid {
		claim.AwaitID, claim.StepID = awaitID.String, stepID.String
	}
	return claim, nil
}

// claimNext runs claimSQL: the claimed task, or nil when none was claimed
// (nothing routed to the reviewer, or they are at their limit).
func (q *Queue) claimNext(ctx context.Context, pool gorm.ConnPool, workspaceID, userID string, now, expires time.Time) (*ReviewClaim, error) {
	// The hot path of the queue runs its statement on the pool itself: gorm's
	// Scan renders the statement with its arguments for a log it discards
	// (regular expressions) and scans by reflection, two fifths of the api's
	// CPU in Next under the bench.
	claim := &ReviewClaim{ClaimedBy: userID, AssignedTo: userID, ClaimExpiresAt: expires}
	var awaitID, stepID sql.NullString
	var createdAt models.Timestamp // a RETURNING column: text on SQLite
	err := pool.QueryRowContext(ctx, q.claimSQL, userID, expires, workspaceID, now).
		Scan(&claim.TaskID, &claim.AgentID, &claim.Title, &claim.Priority, &createdAt, &awaitID, &stepID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim: claim next task: %w", err)
	}
	claim.CreatedAt = createdAt.Time
	if awaitID.Valid && stepID.Valid {
		claim.AwaitID, claim.StepID = awaitID.String, stepID.String
	}
	return claim, nil
}

// overLimit tells why claimSQL claimed nothing: the ClaimLimitReached
// conflict when reviewer userID holds the workspace's limit, else nil
// (nothing waits for them).
func (q *Queue) overLimit(ctx context.Context, pool gorm.ConnPool, workspaceID, userID string, now time.Time) error {
	rows, err := pool.QueryContext(ctx, q.heldSQL, workspaceID, userID, now)
	if err != nil {
		return fmt.Errorf("claim: list held claims: %w", err)
	}
	defer rows.Close()
	held, limit := []HeldClaim{}, 0
	for rows.Next() {
		var id, title sql.NullString
		var expires models.Timestamp
		if err := rows.Scan(&id, &title, &expires, &limit); err != nil {
			return fmt.Errorf("claim: list held claims: %w", err)
		}
		if id.Valid {
			held = append(held, HeldClaim{TaskID: id.String, Title: title.String, ClaimExpiresAt: expires.Time})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("claim: list held claims: %w", err)
	}
	if limit == 0 || len(held) < limit {
		return nil
	}
	e := apperr.Conflictf("you hold %d review claim(s), this workspace's limit: finish or abort one before asking for the next", len(held))
	e.Detail = map[string]any{"code": ClaimLimitReached, "claim_limit": limit, "held_claims": held}
	return e
}

// pool is what the queue's own statements run on: the database pool, or the
// transaction a test's Store wraps.
func (q *Queue) pool() gorm.ConnPool { return q.store.DB.Statement.ConnPool }

// Abort puts taskID back in the queue for reviewer userID of workspaceID
// (abort_review_task): its claim and its assignment are dropped. Only the
// holder of a live claim may: a task of another workspace is 404, one that
// someone else holds, or nobody, 409.
func (q *Queue) Abort(ctx context.Context, workspaceID, userID, taskID string) error {
	if !models.IsID(userID) {
		return apperr.Forbiddenf("the review queue needs a reviewer: use a host token issued for a user")
	}
	if !models.IsID(taskID) {
		return apperr.NotFoundf("task %s not found", taskID)
	}
	res, err := q.pool().ExecContext(ctx, q.abortSQL, taskID, workspaceID, userID, q.now().UTC())
	if err != nil {
		return fmt.Errorf("claim: abort review of task %s: %w", taskID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("claim: abort review of task %s: %w", taskID, err)
	}
	if n > 0 {
		return nil
	}
	var t models.Task
	err = q.store.DB.WithContext(ctx).Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return apperr.NotFoundf("task %s not found", taskID)
	}
	if err != nil {
		return fmt.Errorf("claim: load task %s: %w", taskID, err)
	}
	return apperr.Conflictf("task %s is not claimed by you: only the reviewer holding it may put it back", taskID)
}

// Holds reports, as an error, whether reviewer userID holds a live claim on
// taskID of workspaceID: nil when they do, 404 for a task of another
// workspace, 409 when they do not (anymore).
func (q *Queue) Holds(ctx context.Context, workspaceID, userID, taskID string) error {
	if !models.IsID(taskID) {
		return apperr.NotFoundf("task %s not found", taskID)
	}
	var t models.Task
	err := q.store.DB.WithContext(ctx).Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return apperr.NotFoundf("task %s not found", taskID)
	}
	if err != nil {
		return fmt.Errorf("claim: load task %s: %w", taskID, err)
	}
	if t.ClaimedBy == nil || *t.ClaimedBy != userID || t.ClaimExpiresAt == nil || !t.ClaimExpiresAt.After(q.now()) {
		return apperr.Conflictf("you do not hold task %s: ask for the next review", taskID)
	}
	return nil
}

// PendingStep returns the app-tool step taskID is parked on (its oldest
// pending await's), or "" when nothing is pending.
func (q *Queue) PendingStep(ctx context.Context, taskID string) (string, error) {
	var aw models.TaskAwait
	res := q.store.DB.WithContext(ctx).Where("task_id = ? AND status = ? AND source_type = ?", taskID, models.AwaitPending, models.AwaitSourceAppTool).
		Order("created_at").Limit(1).Find(&aw)
	if res.Error != nil {
		return "", fmt.Errorf("claim: load pending await of %s: %w", taskID, res.Error)
	}
	return aw.CorrelationKey, nil
}
