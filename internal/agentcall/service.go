package agentcall

import (
	"context"
	"log/slog"
	"time"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
)

// Service stores agent tool declarations and runs their calls and their
// cards' buttons. It is safe for concurrent use.
type Service struct {
	st           *store.Store
	components   agenttool.ComponentSource
	dispatcher   *agenttool.Dispatcher
	log          *slog.Logger
	afterRelease func(ctx context.Context)
	deadline     time.Duration
	jobs         *jobwait.Waiter
	queue        string
}

// Options are what a Service is built from.
type Options struct {
	Store *store.Store
	// Components loads the component integrations app targets name.
	Components agenttool.ComponentSource
	// Dispatcher runs targets (through the gateway's guarded client).
	Dispatcher *agenttool.Dispatcher
	Log        *slog.Logger
	// AfterRelease runs after a click released a parked task (it wakes
	// the outbox relay); nil does nothing.
	AfterRelease func(ctx context.Context)
	// Deadline bounds one tool call or one button's target, from dispatch
	// to result: jobs.LookupDeadline when zero (a tool call is a lookup).
	Deadline time.Duration
	// Jobs runs targets on the worker fleet's Queue (the lookup queue) and
	// waits for them, as /run does; nil runs them in this process within
	// the same deadline.
	Jobs  *jobwait.Waiter
	Queue string
}

// NewService returns a Service.
func NewService(o Options) *Service {
	s := &Service{st: o.Store, components: o.Components, dispatcher: o.Dispatcher, log: o.Log,
		afterRelease: o.AfterRelease, deadline: o.Deadline, jobs: o.Jobs, queue: o.Queue}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.deadline <= 0 {
		s.deadline = jobs.LookupDeadline
	}
	return s
}
