package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/models"
)

// MaxSeedRows bounds the rows one producer may seed.
const MaxSeedRows = 10000

// SeedWrite is one row a producer seeds through one of its binding's write
// ops: a producer's output is {"writes": [{"op": …, "row": {…}}, …]}.
type SeedWrite struct {
	Op  string         `json:"op"`
	Row map[string]any `json:"row"`
}

// Seed writes a producer's rows through the binding named by c (the
// artifact step's scope, no session), each through its write op with the
// same column rules and fixed values as /write, in one transaction on the
// binding's data source: all rows are written or none. It returns the rows
// affected. A bad row refuses the whole seed before anything is written.
//
// A step's rows are seeded once, however often its producer runs: the
// data-source transaction is journaled (models.ProducerSeed) before it
// commits, and a later attempt for the same step asks the data source what
// became of it: committed, its rows are there and Seed returns their count
// without writing; aborted, it seeds again; still open (a dead worker's
// connection not yet gone), apperr.Unavailable for a retry. The dev mode's
// SQLite data source cannot name transactions and is not journaled.
func (s *Service) Seed(ctx context.Context, c session.Claims, rows []SeedWrite) (int64, error) {
	if len(rows) > MaxSeedRows {
		return 0, apperr.Invalidf("a producer may seed at most %d rows, not %d", MaxSeedRows, len(rows))
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	if b.Kind == bindingspec.KindREST {
		return 0, apperr.Invalidf("a producer cannot seed rows through a REST binding")
	}
	stmts := make([]datasource.WriteStmt, len(rows))
	for i, w := range rows {
		op, ok := b.Write(w.Op)
		if !ok {
			return 0, apperr.Forbiddenf("writes[%d]: %q is not a write op of the binding", i, w.Op)
		}
		if w.Row == nil {
			return 0, apperr.Invalidf("writes[%d].row is required: the row to write", i)
		}
		if stmts[i], err = writeStmt(op, w.Row, c); err != nil {
			return 0, fmt.Errorf("writes[%d]: %w", i, err)
		}
	}
	src, err := s.source(ctx, b)
	if err != nil {
		return 0, err
	}
	if n, done, err := s.seededBefore(ctx, src, c.StepID); err != nil || done {
		return n, err
	}
	tx, err := src.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var total int64
	for i, st := range stmts {
		n, err := tx.Write(ctx, st)
		if err != nil {
			return 0, fmt.Errorf("writes[%d] (op %q): %w", i, rows[i].Op, err)
		}
		total += n
	}
	id, err := tx.ID(ctx)
	if err != nil {
		return 0, err
	}
	if id == "" {
		return total, tx.Commit(ctx)
	}
	journal := models.ProducerSeed{StepID: c.StepID, SourceTx: id, Rows: total, CreatedAt: time.Now().UTC()}
	if err := s.Store.DB.WithContext(ctx).Create(&journal).Error; err != nil {
		return 0, fmt.Errorf("runtime: journal seed: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		if datasource.CommitRefused(err) {
			// Refused: nothing was written, and the next attempt seeds
			// afresh (were this delete lost, it would ask the data source).
			// Any other failure may have committed: the journal stays for
			// the next attempt to ask.
			_ = s.Store.DB.WithContext(context.WithoutCancel(ctx)).Delete(&journal).Error
		}
		return 0, err
	}
	return total, nil
}

// seededBefore reports whether an earlier attempt seeded step's rows: the
// journaled transaction committed (done, with its row count). An aborted
// one's journal entry is dropped, so the caller seeds again.
func (s *Service) seededBefore(ctx context.Context, src datasource.Source, stepID string) (rows int64, done bool, err error) {
	db := s.Store.DB.WithContext(ctx)
	var j models.ProducerSeed
	res := db.Where("step_id = ?", stepID).Limit(1).Find(&j)
	if res.Error != nil {
		return 0, false, fmt.Errorf("runtime: read seed journal: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return 0, false, nil
	}
	outcome, err := src.TxStatus(ctx, j.SourceTx)
	if err != nil {
		return 0, false, err
	}
	switch outcome {
	case datasource.TxCommitted:
		return j.Rows, true, nil
	case datasource.TxAborted:
		if err := db.Where("step_id = ? AND source_tx = ?", stepID, j.SourceTx).Delete(&models.ProducerSeed{}).Error; err != nil {
			return 0, false, fmt.Errorf("runtime: drop seed journal: %w", err)
		}
		return 0, false, nil
	case datasource.TxInProgress:
		return 0, false, apperr.New(apperr.Unavailable, "an earlier attempt's seeding transaction is still open on the data source; retry")
	}
	return 0, false, apperr.Conflictf("cannot tell whether an earlier attempt's rows were written (data-source transaction %s)", j.SourceTx)
}
