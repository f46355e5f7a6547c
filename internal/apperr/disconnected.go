package apperr

import (
	"database/sql/driver"
	"errors"
	"net"
	"strings"
	"syscall"
)

const disconnectedMessage = "a required service is unavailable; retry shortly"

// Disconnected reports whether err says that a connection to a database (or
// another service the platform depends on) could not be made or was closed
// under the statement: the server refused it, is starting up or shutting
// down (a Postgres restart: SQLSTATE class 08, 57P01, 57P02, 57P03), or the
// network failed. Such a failure is worth retrying shortly, so the caller
// sees 503 with Retry-After, not 500 (docs/operators.md#health-logs-and-shutdown).
// It reads drivers' errors through the interfaces they implement (pgx's
// SQLState and SafeToRetry), so that this leaf imports no driver.
func Disconnected(err error) bool {
	if err == nil {
		return false
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		code := state.SQLState()
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
	}
	var retry interface{ SafeToRetry() bool }
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return true // nothing was sent
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}
