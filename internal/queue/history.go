package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
)

// HistoryDays is how many days of daily counts a queue's chart shows; asynq
// keeps each day's counters for 90 days.
const HistoryDays = 14

// Day is one UTC day's runs of a queue: Processed counts every run that
// ended (failures included), Failed those that returned an error.
type Day struct {
	Date              time.Time
	Processed, Failed int
}

// History is a queue's daily counts, oldest day first. Unavailable says why
// there are none when the Redis behind the deployment cannot give them (the
// counts are read with a Lua script); the page says so rather than failing.
type History struct {
	Days        []Day
	Unavailable string
}

// History returns the last days (at most 90) of queue's daily counts. A
// queue that never had a task has zero counts.
func (s *Service) History(_ context.Context, queue string, days int) (History, error) {
	if err := s.check(queue); err != nil {
		return History{}, err
	}
	if days < 1 || days > 90 {
		return History{}, apperr.Invalidf("days must be between 1 and 90, not %d", days)
	}
	known, err := s.insp.Queues()
	if err != nil {
		return History{}, apperr.Wrap(err, apperr.Unavailable, "the queues cannot be read; retry")
	}
	if !slices.Contains(known, queue) {
		// asynq answers a queue that never had a task with an error of its
		// internal package, not ErrQueueNotFound.
		return History{Days: emptyDays(time.Now(), days)}, nil
	}
	stats, err := s.insp.History(queue, days)
	switch {
	case err != nil && unsupported(err):
		return History{Unavailable: "daily counts are not available on this Redis (" + err.Error() + ")"}, nil
	case err != nil:
		return History{}, apperr.Wrap(err, apperr.Unavailable, "the history of queue %s cannot be read; retry", queue)
	}
	out := History{Days: make([]Day, len(stats))}
	// asynq answers newest first; a chart reads left to right.
	for i, d := range stats {
		out.Days[len(stats)-1-i] = Day{Date: d.Date.UTC().Truncate(24 * time.Hour), Processed: d.Processed, Failed: d.Failed}
	}
	return out, nil
}

// emptyDays is days days of zero counts ending with now's day.
func emptyDays(now time.Time, days int) []Day {
	out := make([]Day, days)
	today := now.UTC().Truncate(24 * time.Hour)
	for i := range out {
		out[i].Date = today.AddDate(0, 0, i-days+1)
	}
	return out
}

// unsupported reports whether err is a Redis refusing a command or script
// it does not implement (an in-process or managed Redis with commands
// disabled), as opposed to a Redis that is down.
func unsupported(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"unknown command", "unknown subcommand", "not supported", "noscript", "err error running script", "disabled"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Memory shows the queue's approximate memory use in Redis (asynq samples
// up to 20 tasks of each state) in B, KiB or MiB.
func (i Info) Memory() string {
	if i.MemoryUnavailable {
		return "not available on this Redis"
	}
	return humanBytes(i.MemoryBytes)
}

// LatencyText shows Latency to the millisecond.
func (i Info) LatencyText() string { return i.Latency.Round(time.Millisecond).String() }

// humanBytes renders n bytes in the largest binary unit that keeps it >= 1.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
