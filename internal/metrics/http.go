package metrics

import (
	"errors"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/appruntime/appruntime/internal/apperr"
)

// UnmatchedRoute is the route label of a request no route matched, so that
// scanners probing random paths add one series, not one per path.
const UnmatchedRoute = "unmatched"

// HTTP returns a Fiber middleware that records every request's duration by
// route pattern ("/api/tasks/:id", never the raw path), method and status,
// under server ("api", "console"). Mount it with app.Use after the request
// context middleware; the runtime verbs have ObserveVerb instead, with the op
// kind. A nil *Metrics returns a middleware that only calls the next handler.
func (m *Metrics) HTTP(server string) fiber.Handler {
	if m == nil {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	h := &httpMetrics{vec: m.httpDuration.MustCurryWith(prometheus.Labels{"server": server}), byKey: map[httpKey]prometheus.Observer{}}
	return h.handle
}

type httpKey struct {
	route, method string
	status        int
}

// httpMetrics caches a child per (route, method, status): a seen key is a
// map read under a read lock, with no allocation.
type httpMetrics struct {
	vec   prometheus.ObserverVec
	mu    sync.RWMutex
	byKey map[httpKey]prometheus.Observer
}

func (h *httpMetrics) handle(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := ResponseStatus(c, err)
	// The route that ran last: its Path is the registered pattern and its
	// Method one of the app's methods, strings Fiber keeps for the app's
	// life, so they key the cache as they are.
	r := c.Route()
	route := r.Path
	// Only the router answers with its own 404 and 405 (handlers return
	// apperr errors): no route matched the path.
	var fe *fiber.Error
	if errors.As(err, &fe) && (fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed) {
		route = UnmatchedRoute
	}
	key := httpKey{route: route, method: r.Method, status: status}
	h.mu.RLock()
	o, ok := h.byKey[key]
	h.mu.RUnlock()
	if !ok {
		o = h.vec.WithLabelValues(route, r.Method, statusLabel(status))
		h.mu.Lock()
		h.byKey[key] = o
		h.mu.Unlock()
	}
	o.Observe(time.Since(start).Seconds())
	return err
}

// ResponseStatus is the status a request is answered with once the handlers
// after a middleware returned err: the error handler renders after the
// middlewares return, so for an error it is the status that handler will
// answer (a fiber.Error's code, an apperr code's status), else the one set.
func ResponseStatus(c *fiber.Ctx, err error) int {
	if err == nil {
		return c.Response().StatusCode()
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	_, status, _ := apperr.Public(err)
	return status
}
