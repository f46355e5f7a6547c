package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The runtime verbs (seed 000), in label order.
var verbs = []string{"read", "write", "action", "run", "capability"}

// The op kinds every deployment has: the v2 envelope's kind for each verb,
// and KindNone for a call refused before its op was resolved (a bad token,
// a body over the cap). A capability call's kind is the capability's name.
const (
	KindRows   = "rows"
	KindHTTP   = "http"
	KindWrite  = "write"
	KindAction = "action"
	KindRun    = "run"
	KindNone   = "none"
)

// commonStatuses are the statuses seed 000 gives the verbs; each has a
// cached child. Any other status is recorded too, through the slower path.
var commonStatuses = []int{200, 400, 401, 403, 404, 409, 413, 429, 500, 501, 502, 503, 504}

// statusSlot maps a status to its index in commonStatuses, -1 for others.
var statusSlot = func() [600]int8 {
	var t [600]int8
	for i := range t {
		t[i] = -1
	}
	for i, s := range commonStatuses {
		t[s] = int8(i)
	}
	return t
}()

// verbMetrics is the runtime verb histogram and its cache of children, one
// per (verb, kind, common status), filled on first use: observing a
// combination seen before is index arithmetic, one atomic load and the
// histogram's own lock-free update.
type verbMetrics struct {
	vec      *prometheus.HistogramVec
	kinds    []string       // label values, by index
	kindSlot map[string]int // capability kinds → index
	cache    observerCache
}

// Fixed kind indexes; capability kinds follow them.
const (
	kindRows = iota
	kindHTTP
	kindWrite
	kindAction
	kindRun
	kindNone
	kindOther
	fixedKinds
)

func newVerbMetrics(reg prometheus.Registerer, capabilities []string) verbMetrics {
	v := verbMetrics{
		vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "runtime_verb_duration_seconds",
			Help: "Runtime verb calls (/api/app-runtime/*) by verb, op kind and HTTP status; _count is the number of calls.",
			// /run waits up to 900 s for a python tool.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900},
		}, []string{"verb", "kind", "status"}),
		kinds:    []string{KindRows, KindHTTP, KindWrite, KindAction, KindRun, KindNone, Other},
		kindSlot: map[string]int{},
	}
	for _, c := range capabilities {
		if _, dup := v.kindSlot[c]; dup || v.kindOf(c) != kindOther {
			continue
		}
		v.kindSlot[c] = len(v.kinds)
		v.kinds = append(v.kinds, c)
	}
	v.cache = newObserverCache(v.vec, (len(verbs)+1)*len(v.kinds)*len(commonStatuses))
	reg.MustRegister(v.vec)
	return v
}

// verbOf returns the verb's index; len(verbs) is "other".
func verbOf(verb string) int {
	switch verb {
	case "read":
		return 0
	case "write":
		return 1
	case "action":
		return 2
	case "run":
		return 3
	case "capability":
		return 4
	}
	return len(verbs)
}

func verbLabel(i int) string {
	if i < len(verbs) {
		return verbs[i]
	}
	return Other
}

// kindOf returns the kind's index; kindOther for an unknown kind.
func (v *verbMetrics) kindOf(kind string) int {
	switch kind {
	case KindRows:
		return kindRows
	case KindHTTP:
		return kindHTTP
	case KindWrite:
		return kindWrite
	case KindAction:
		return kindAction
	case KindRun:
		return kindRun
	case KindNone, "":
		return kindNone
	}
	if i, ok := v.kindSlot[kind]; ok {
		return i
	}
	return kindOther
}

// ObserveVerb records one runtime verb call: verb is the route's verb (read,
// write, action, run, capability), kind the op's kind (KindRows, KindHTTP,
// KindWrite, KindAction, KindRun, a capability's name, or KindNone when the
// call failed before its op was known), status the HTTP status answered,
// and d the time from receiving the request to answering it. It is on the
// path of every runtime call: no lock, no allocation once a combination has
// been seen.
func (m *Metrics) ObserveVerb(verb, kind string, status int, d time.Duration) {
	if m == nil {
		return
	}
	v := &m.verb
	vi, ki := verbOf(verb), v.kindOf(kind)
	if status < 0 || status >= len(statusSlot) || statusSlot[status] < 0 {
		// An unusual status: recorded, at the price of a label lookup.
		v.vec.WithLabelValues(verbLabel(vi), v.kinds[ki], statusLabel(status)).Observe(d.Seconds())
		return
	}
	idx := (vi*len(v.kinds)+ki)*len(commonStatuses) + int(statusSlot[status])
	v.cache.observe(idx, d.Seconds(), func() []string {
		return []string{verbLabel(vi), v.kinds[ki], strconv.Itoa(status)}
	})
}

// statusLabel is an HTTP status as a label, "other" outside 100–599.
func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return Other
	}
	return strconv.Itoa(status)
}

// Limit classes a surface can hit (seed 000): the per-surface call rate on
// /action, /run and http_call reads (5/s, burst 20), and the per-surface
// bound on concurrent structured_data_extraction runs (2).
const (
	LimitSurfaceRate     = "surface_rate"
	LimitExtractionSlots = "extraction_slots"
)

// ObserveRateLimited records one call refused with 429 by the limit class
// (LimitSurfaceRate, LimitExtractionSlots) on verb.
func (m *Metrics) ObserveRateLimited(class, verb string) {
	if m == nil {
		return
	}
	if class != LimitSurfaceRate && class != LimitExtractionSlots {
		class = Other
	}
	m.rateLimited.WithLabelValues(class, verbLabel(verbOf(verb))).Inc()
}
