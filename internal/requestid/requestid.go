// Package requestid carries the id of the request that started some work
// across process boundaries, so that one id finds a /run in the api's and the
// worker's logs alike: into the asynq tasks it enqueues (a task header, back
// into the job's context by JobMiddleware) and onto the outbound HTTP calls
// made on its behalf (X-Request-Id, by Transport). Inside a process the id
// lives where internal/logging keeps it, so every log line carries it.
package requestid

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/jobs"
)

// Header is the HTTP header a request id travels in, inbound and outbound.
const Header = "X-Request-Id"

// TaskHeader is the asynq task header a request id travels in. Task headers
// are metadata beside the payload, so no job's arguments change.
const TaskHeader = "request_id"

// MaxLen is the longest request id passed on.
const MaxLen = 64

// Valid reports whether id is a request id worth carrying: 1 to 64
// characters of letters, digits and . _ : -. Anything else could forge log
// lines or headers downstream.
//
// It runs for every request and every job, so it is a loop, not a regular
// expression.
func Valid(id string) bool {
	if len(id) == 0 || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// From returns ctx's request id, or "".
func From(ctx context.Context) string { return logging.RequestIDOf(ctx) }

// With returns ctx carrying id as its request id, so every line logged with
// it carries the id. An invalid id leaves ctx as it is.
func With(ctx context.Context, id string) context.Context {
	if !Valid(id) || From(ctx) == id {
		return ctx
	}
	return logging.With(ctx, slog.String(logging.RequestID, id))
}

// TaskHeaders returns the task headers that carry ctx's request id and,
// with tracing on, its trace context (internal/tracing), or nil when ctx has
// neither.
func TaskHeaders(ctx context.Context) map[string]string {
	var h map[string]string
	if id := From(ctx); Valid(id) {
		h = map[string]string{TaskHeader: id}
	}
	return tracing.AddTaskHeaders(ctx, h)
}

// NewTask is jobs.NewTask for work caused by the request in ctx: the task
// carries its request id. Enqueue every job through it where a request (or a
// job that one caused) is behind it.
func NewTask(ctx context.Context, args jobs.Args, opts ...asynq.Option) (*asynq.Task, error) {
	return jobs.NewTaskWithHeaders(args, TaskHeaders(ctx), opts...)
}

// FromTask returns ctx carrying the request id task t was enqueued with, or
// ctx itself when t carries none.
func FromTask(ctx context.Context, t *asynq.Task) context.Context {
	return With(ctx, t.Headers()[TaskHeader])
}

// JobMiddleware is an asynq middleware that puts a job's request id in the
// context its handler runs with (FromTask): the handler's log lines carry
// it, and the tasks it enqueues through NewTask pass it on.
func JobMiddleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		return next.ProcessTask(FromTask(ctx, t), t)
	})
}

// Transport returns a RoundTripper that sends the request id of each
// request's context as X-Request-Id, so the receiver's logs can be joined to
// ours; a request that already has the header, or whose context carries no
// id, is sent as it is. next nil means http.DefaultTransport. As the
// RoundTripper contract asks, the caller's request is never modified: one
// that gets the header is a shallow copy with its own headers.
func Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return transport{next: next}
}

type transport struct{ next http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	id := From(req.Context())
	if !Valid(id) || req.Header.Get(Header) != "" {
		return t.next.RoundTrip(req)
	}
	out := *req
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	out.Header.Set(Header, id)
	return t.next.RoundTrip(&out)
}

// CloseIdleConnections closes the idle connections of the wrapped transport,
// so http.Client.CloseIdleConnections still reaches it.
func (t transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
