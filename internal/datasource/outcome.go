package datasource

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// AnswerLost reports whether a failed write (or commit) may nevertheless
// have committed: the request may have reached the data source, and the
// connection broke or the call was cancelled before its answer came back.
// Every other failure is definite: the database refused the statement (it
// rolled back), or the request was never sent.
func AnswerLost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, pgconn.ErrConnClosed) {
		// pgx marks "conn closed" safe to retry, as if nothing was sent,
		// but also answers it when the connection closed while it was
		// waiting for the reply of a statement already sent (a COMMIT the
		// server ran: TestALostAnswerIsNeverTakenForARefusal).
		return true
	}
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	if errors.As(err, &pgErr) || errors.As(err, &connectErr) || pgconn.SafeToRetry(err) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// CommitRefused reports whether a failed commit was answered by the data
// source with an error (a deferred constraint, a serialization failure):
// the transaction rolled back. Any other failure may have committed.
func CommitRefused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}
