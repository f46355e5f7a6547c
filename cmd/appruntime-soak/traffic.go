package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stats are the requests of the run by verb and status.
type stats struct {
	mu      sync.Mutex
	verbs   map[string]*verbStats
	fiveXX  int
	samples []string // the first 5xx answers, for the report
	cuts    []string // requests that had no answer for long, for the report
}

type verbStats struct {
	status  map[int]int // 0: no answer (the connection was cut, as by a kill -9)
	latency []time.Duration
}

func newStats() *stats { return &stats{verbs: map[string]*verbStats{}} }

// add records one answer. A 5xx counts toward soak_5xx unless it is a 503
// with Retry-After (a refusal the client is told to retry: a failover's or
// a restart's window), the 502 with Retry-After of a /run or an agent tool
// call whose enqueue found no master (seed 000's answer for a broker that
// cannot be reached, told to retry as well), or the 504 of a /run or an
// agent tool call (its documented answer when the job outlasts the wait).
func (s *stats) add(verb string, status int, h http.Header, raw []byte, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.verbs[verb]
	if v == nil {
		v = &verbStats{status: map[int]int{}}
		s.verbs[verb] = v
	}
	v.status[status]++
	if status != 0 {
		v.latency = append(v.latency, d)
	} else if d > 5*time.Second && len(s.cuts) < 10 {
		s.cuts = append(s.cuts, fmt.Sprintf("%s: no answer after %s", verb, d.Round(100*time.Millisecond)))
	}
	if counts5xx(verb, status, h) {
		s.fiveXX++
		if len(s.samples) < 5 {
			s.samples = append(s.samples, fmt.Sprintf("%s %d %.200s", verb, status, raw))
		}
	}
}

func counts5xx(verb string, status int, h http.Header) bool {
	switch {
	case status < 500:
		return false
	case status == 503 && h.Get("Retry-After") != "":
		return false
	case status == 502 && h.Get("Retry-After") != "" && queued(verb):
		return false
	case status == 504 && queued(verb):
		return false
	}
	return true
}

// queued says whether verb's answer waits on a job the worker runs.
func queued(verb string) bool {
	return strings.HasPrefix(verb, "run") || strings.HasPrefix(verb, "tool-call")
}

// table prints requests by verb and status and p50/p99 per verb.
func (s *stats) table(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.verbs))
	for n := range s.verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%-12s %7s %-44s %9s %9s\n", "verb", "total", "by status (0: cut, no answer)", "p50", "p99")
	for _, n := range names {
		v := s.verbs[n]
		codes := make([]int, 0, len(v.status))
		total := 0
		for c, k := range v.status {
			codes = append(codes, c)
			total += k
		}
		sort.Ints(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%d:%d", c, v.status[c])
		}
		sort.Slice(v.latency, func(i, j int) bool { return v.latency[i] < v.latency[j] })
		p50, p99 := pct(v.latency, 50), pct(v.latency, 99)
		fmt.Fprintf(w, "%-12s %7d %-44s %9s %9s\n", n, total, strings.Join(parts, " "), ms(p50), ms(p99))
	}
}

func pct(xs []time.Duration, p int) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return xs[min(len(xs)*p/100, len(xs)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// client alternates between the api processes (a round-robin balancer). A
// request whose connection is refused (that api is down) goes to the next
// one, as a balancer's health check would send it; one cut after it was
// sent is not retried: its outcome is unknown to the client.
type client struct {
	apis  []string
	next  atomic.Uint64
	http  *http.Client
	stats *stats
}

type answer struct {
	status int
	header http.Header
	raw    []byte
	api    string    // the api that answered
	at     time.Time // when its answer came
}

func (a answer) json(v any) error { return json.Unmarshal(a.raw, v) }

func (c *client) call(verb, method, path, token string, body any) answer {
	return c.callWithin(0, verb, method, path, token, body)
}

// callWithin is call waiting at most within for the answer (0: the
// client's timeout); a request past it is cut, status 0.
func (c *client) callWithin(within time.Duration, verb, method, path, token string, body any) answer {
	var payload []byte
	contentType := ""
	if body != nil {
		payload, _ = json.Marshal(body)
		contentType = "application/json"
	}
	return c.sendWithin(within, verb, method, path, token, contentType, payload)
}

// send is call with a body of contentType ("": none) as it is.
func (c *client) send(verb, method, path, token, contentType string, payload []byte) answer {
	return c.sendWithin(0, verb, method, path, token, contentType, payload)
}

func (c *client) sendWithin(within time.Duration, verb, method, path, token, contentType string, payload []byte) answer {
	ctx := context.Background()
	if within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, within)
		defer cancel()
	}
	for range 2 * len(c.apis) {
		api := c.apis[c.next.Add(1)%uint64(len(c.apis))]
		req, err := http.NewRequestWithContext(ctx, method, "http://"+api+path, bytes.NewReader(payload))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		t0 := time.Now()
		res, err := c.http.Do(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				continue // never sent: the balancer tries the other api
			}
			c.stats.add(verb, 0, nil, nil, time.Since(t0))
			return answer{}
		}
		raw, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		c.stats.add(verb, res.StatusCode, res.Header, raw, time.Since(t0))
		return answer{status: res.StatusCode, header: res.Header, raw: raw, api: api, at: time.Now()}
	}
	c.stats.add(verb, 0, nil, nil, 0)
	return answer{}
}

// retryable is an answer to send again: none, or a refusal saying so.
func retryable(a answer) bool {
	return a.status == 0 || a.status == 503 || a.status == 429 || a.status == 502
}
