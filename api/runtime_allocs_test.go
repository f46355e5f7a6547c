package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/logging"
)

// TestRuntimeVerbsAllocationsThroughTheHandler pins the heap allocations of
// a /read of a one-row op and of a lookup through the api's whole handler
// (request id, metrics, CORS, the session check, the verb, the reply), one
// request after another, the request built in memory rather than read from
// a socket. internal/runtime's TestVerbsAllocationsPerCall pins the verbs
// alone; the difference is the HTTP layer's share
// (docs/performance.md#counted-costs). The count is the process's, so it
// does not move with the machine's speed as a timed bench does.
//
// Not parallel: the count is the whole process's, and the package's
// parallel tests wait until the sequential ones are done.
func TestRuntimeVerbsAllocationsThroughTheHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and Redis")
	}
	if raceEnabled {
		t.Skip("allocation counts are not stable under the race detector (sync.Pool drops what is put back)")
	}
	f := newRuntimeFixture(t)
	generousRate(f.api)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"A-1"}`))
	}))
	t.Cleanup(upstream.Close)
	spec := fixtureSpec()
	// The bench's read: one row by its key.
	spec.Reads = append(spec.Reads, bindingspec.Read{Op: "get_invoice", Table: "invoices",
		Columns: []string{"id", "vendor", "status"}, Filterable: []string{"id"}, Limit: 1})
	spec.HTTPCalls = []bindingspec.HTTPCall{{Op: "lookup_item", Method: "GET", URL: upstream.URL + "/items/{{id}}"}}
	f.saveSpec(t, spec)
	// The api's logger at error, as the bench runs it, whatever -v made the
	// fixture's: an access line per request is not what is counted.
	svc := f.api.P.APIServices()
	svc.Log = logging.New(io.Discard, slog.LevelError)
	handle := api.New(svc).Handler()
	auth := "Bearer " + f.token

	for _, tc := range []struct {
		name string
		most float64 // allocations per request, with a margin over what was measured
		body func(i int) string
	}{
		{"read", httpReadAllocs, func(i int) string { return fmt.Sprintf(`{"op":"get_invoice","payload":{"filters":{"id":%d}}}`, 1+i%3) }},
		{"lookup", httpLookupAllocs, func(i int) string { return fmt.Sprintf(`{"op":"lookup_item","payload":{"id":"%d"}}`, i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bodies := make([]string, 100)
			for i := range bodies {
				bodies[i] = tc.body(i)
			}
			var ctx fasthttp.RequestCtx
			ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
			n := 0
			call := func() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetMethod(fiber.MethodPost)
				ctx.Request.SetRequestURI("/api/app-runtime/read")
				ctx.Request.Header.SetContentType(fiber.MIMEApplicationJSON)
				ctx.Request.Header.Set(fiber.HeaderAuthorization, auth)
				ctx.Request.SetBodyString(bodies[n%len(bodies)])
				n++
				handle(&ctx)
				if ctx.Response.StatusCode() != fiber.StatusOK {
					t.Fatalf("%s: status %d: %s", tc.name, ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
			for range 50 { // the caches, the pools and the limiter's lease warm
				call()
			}
			got := testing.AllocsPerRun(300, call)
			t.Logf("%s: %.1f allocations per request (at most %.0f)", tc.name, got, tc.most)
			if got > tc.most {
				t.Errorf("/read (%s) allocates %.1f times per request through the handler, over its bound of %.0f: find the new allocation (go test -memprofile, go tool pprof -sample_index=alloc_objects) or say in docs/performance.md why it is needed",
					tc.name, got, tc.most)
			}
		})
	}
}

// The bounds: what one sequential request allocated when measured, and a
// margin. The verbs alone allocate 27 (read) and 107 (lookup) in
// internal/runtime's count, on its own fixture.
const (
	httpReadAllocs   = 32  // 29 measured (34 before the request's context, its id, its claims and its op kind stopped allocating)
	httpLookupAllocs = 113 // 109 measured (115 before)
)
