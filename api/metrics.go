package api

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/runtime"
)

// verbKindKey is the Fiber local in which a runtime verb leaves its op kind
// for observe.
type verbKindKey struct{}

// kindValue is kind as the any that Locals keeps: the verbs' own kinds are
// constants, which become an interface without the allocation a string
// computed at run time costs (a capability's kind is its name).
func kindValue(kind string) any {
	switch kind {
	case runtime.KindRows:
		return runtime.KindRows
	case runtime.KindHTTP:
		return runtime.KindHTTP
	case runtime.KindWrite:
		return runtime.KindWrite
	case runtime.KindAction:
		return runtime.KindAction
	case runtime.KindRun:
		return runtime.KindRun
	}
	return kind
}

// observe records every request in the metrics: a runtime verb call in
// appruntime_runtime_verb_duration_seconds by verb, op kind and status (and
// a 429 by the limit the surface hit), any other request in
// appruntime_http_request_duration_seconds by route.
func (s *server) observe() fiber.Handler {
	other := s.Metrics.HTTP("api")
	return func(c *fiber.Ctx) error {
		verb := runtimeVerb(c)
		if verb == "" {
			return other(c)
		}
		start := time.Now()
		err := c.Next()
		status := metrics.ResponseStatus(c, err)
		kind, _ := c.Locals(verbKindKey{}).(string)
		if kind == "" {
			kind = metrics.KindNone
		}
		s.Metrics.ObserveVerb(verb, kind, status, time.Since(start))
		if status == fiber.StatusTooManyRequests {
			class := metrics.LimitSurfaceRate
			if errors.Is(err, limit.ErrSlotsTaken) {
				class = metrics.LimitExtractionSlots
			}
			s.Metrics.ObserveRateLimited(class, verb)
		}
		return err
	}
}

// runtimeVerb returns the verb of a runtime call (POST /api/app-runtime/read
// and the others), or "" for any other request, a preflight included. The
// verb is one of our constants, never the request's own bytes.
func runtimeVerb(c *fiber.Ctx) string {
	if c.Method() != fiber.MethodPost {
		return ""
	}
	rest, ok := strings.CutPrefix(c.Path(), artifact.RuntimePath+"/")
	if !ok {
		return ""
	}
	for _, v := range []string{"read", "write", "action", "run", "capability"} {
		if rest == v {
			return v
		}
	}
	return ""
}
