package apperr

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code names a class of failure. The strings are stable: they appear in logs.
type Code string

// The codes every package uses. Add one only together with its row in statusByCode.
const (
	Invalid          Code = "invalid"            // malformed request or input
	Unauthenticated  Code = "unauthenticated"    // missing, expired or unverifiable credentials
	Forbidden        Code = "forbidden"          // authenticated, but not allowed
	NotFound         Code = "not_found"          // no such thing (or not visible to the caller)
	Conflict         Code = "conflict"           // the state does not allow the change
	TooLarge         Code = "too_large"          // body or payload over a cap
	UnsupportedMedia Code = "unsupported_media"  // a body of a Content-Type the route does not take
	RateLimited      Code = "rate_limited"       // too many calls; RetryAfter says how long to wait
	NotImplemented   Code = "not_implemented"    // the deployment lacks the backing service
	BadGateway       Code = "bad_gateway"        // an upstream could not be reached or refused
	Unavailable      Code = "unavailable"        // a bulkhead or dependency is saturated; retryable
	Timeout          Code = "timeout"            // a deadline passed
	Internal         Code = "internal"           // a bug or an unexpected failure; detail is logged, not shown
	NotMigrated      Code = "not_migrated"       // the database schema is behind this binary
	MethodNotAllowed Code = "method_not_allowed" // the route exists for another method
	// OverBudget refuses input whose processing would pass one of the
	// platform's work budgets (a document decoding to more bytes than a
	// page may, a sheet of more cells than are read): well-formed, but
	// not processed; the message names the limit.
	OverBudget Code = "over_budget"
	// InvalidBlocks refuses a reply's blocks (seed 004: "the platform's
	// existing invalid_blocks code"); Detail lists a reason per block.
	InvalidBlocks Code = "invalid_blocks"
)

var statusByCode = map[Code]int{
	Invalid: http.StatusBadRequest,
	// A refused reply is a request the client must change, like any other
	// invalid input: 400, so clients that branch on status treat it the
	// same way and tell it apart by its code.
	InvalidBlocks:    http.StatusBadRequest,
	Unauthenticated:  http.StatusUnauthorized,
	Forbidden:        http.StatusForbidden,
	NotFound:         http.StatusNotFound,
	MethodNotAllowed: http.StatusMethodNotAllowed,
	Conflict:         http.StatusConflict,
	TooLarge:         http.StatusRequestEntityTooLarge,
	UnsupportedMedia: http.StatusUnsupportedMediaType,
	OverBudget:       http.StatusUnprocessableEntity,
	RateLimited:      http.StatusTooManyRequests,
	Internal:         http.StatusInternalServerError,
	NotMigrated:      http.StatusInternalServerError,
	NotImplemented:   http.StatusNotImplemented,
	BadGateway:       http.StatusBadGateway,
	Unavailable:      http.StatusServiceUnavailable,
	Timeout:          http.StatusGatewayTimeout,
}

// Error is an application error: a code, a message safe to show the caller,
// and optionally the underlying cause (never shown, only logged).
type Error struct {
	Code    Code
	Message string
	// RetryAfter, when positive, is sent as the Retry-After header (whole seconds, at least 1).
	RetryAfter time.Duration
	// Detail is extra structured data some replies carry (for example an action's
	// partial results). It is rendered only in the v1 shape, next to "error".
	Detail map[string]any
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code and a message formatted like fmt.Sprintf.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code and message whose cause is err.
func Wrap(err error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// Shorthands for the common codes.

// Invalidf is a 400.
func Invalidf(format string, args ...any) *Error { return New(Invalid, format, args...) }

// Forbiddenf is a 403.
func Forbiddenf(format string, args ...any) *Error { return New(Forbidden, format, args...) }

// NotFoundf is a 404.
func NotFoundf(format string, args ...any) *Error { return New(NotFound, format, args...) }

// Unauthenticatedf is a 401.
func Unauthenticatedf(format string, args ...any) *Error {
	return New(Unauthenticated, format, args...)
}

// Conflictf is a 409.
func Conflictf(format string, args ...any) *Error { return New(Conflict, format, args...) }

// NotImplementedf is a 501.
func NotImplementedf(format string, args ...any) *Error {
	return New(NotImplemented, format, args...)
}

// RateLimitedAfter is a 429 that tells the caller to wait d.
func RateLimitedAfter(d time.Duration, format string, args ...any) *Error {
	e := New(RateLimited, format, args...)
	e.RetryAfter = d
	return e
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// Status is the one code → HTTP status table.
func Status(code Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus maps an HTTP status back to a code, for errors raised by the
// HTTP framework itself (404 route, 405 method, 413 body limit). The codes
// that share a status with a general one (NotMigrated, InvalidBlocks) are
// never the answer.
func CodeForStatus(status int) Code {
	for c, s := range statusByCode {
		if s == status && c != NotMigrated && c != InvalidBlocks {
			return c
		}
	}
	if status >= 500 {
		return Internal
	}
	return Invalid
}

// Public returns what may be shown to a caller for err: its code, HTTP status
// and message. An error without an *Error in its chain (or an Internal one) is
// shown as a generic message; the caller of Public is expected to log it.
// One without an *Error that says a database or service connection could
// not be made or was closed (Disconnected) is a retryable 503 instead.
func Public(err error) (code Code, status int, message string) {
	var e *Error
	if !errors.As(err, &e) {
		if Disconnected(err) {
			return Unavailable, http.StatusServiceUnavailable, disconnectedMessage
		}
		return Internal, http.StatusInternalServerError, "internal error"
	}
	if e.Code == Internal || e.Code == NotMigrated {
		return Internal, http.StatusInternalServerError, "internal error"
	}
	return e.Code, Status(e.Code), e.Message
}

// RetryAfterSeconds returns the whole seconds (≥ 1) to put in Retry-After, or
// 0 when err carries no retry hint.
func RetryAfterSeconds(err error) int {
	var e *Error
	if !errors.As(err, &e) || e.RetryAfter <= 0 {
		return 0
	}
	s := int((e.RetryAfter + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// DetailOf returns the Detail of the first *Error in err's chain.
func DetailOf(err error) map[string]any {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return nil
}
