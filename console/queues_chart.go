package console

import (
	"strconv"

	"github.com/appruntime/appruntime/internal/queue"
)

// historyChart is a queue's daily counts laid out as an inline SVG bar
// chart (the page's CSP allows no script to draw one): one bar per day,
// its failed runs stacked on its succeeded ones.
type historyChart struct {
	Width, Height int
	// Max is the count the top of the chart stands for.
	Max  int
	Bars []historyBar
	// Processed and Failed total the days shown.
	Processed, Failed int
}

// historyBar is one day's bar, in SVG coordinates (y grows downwards).
type historyBar struct {
	Day               string
	Label             string
	Processed, Failed int
	X, Width          int
	OKY, OKHeight     int
	FailY, FailHeight int
	ShowLabel         bool
}

// Chart geometry, in SVG user units.
const (
	chartBarWidth = 22
	chartGap      = 6
	chartPlot     = 100 // the height of the bars' area
	chartTop      = 14  // room for the maximum's label
	chartBottom   = 18  // room for the day labels
)

// newHistoryChart lays out h's days.
func newHistoryChart(h queue.History) historyChart {
	c := historyChart{Width: len(h.Days)*(chartBarWidth+chartGap) + chartGap, Height: chartTop + chartPlot + chartBottom, Max: 1}
	for _, d := range h.Days {
		c.Max = max(c.Max, d.Processed)
		c.Processed += d.Processed
		c.Failed += d.Failed
	}
	base := chartTop + chartPlot
	for i, d := range h.Days {
		failed := min(d.Failed, d.Processed)
		failH := scaled(failed, c.Max)
		okH := scaled(d.Processed, c.Max) - failH
		c.Bars = append(c.Bars, historyBar{
			Day: d.Date.Format("2006-01-02"), Label: d.Date.Format("Jan 2"),
			Processed: d.Processed, Failed: d.Failed,
			X: chartGap + i*(chartBarWidth+chartGap), Width: chartBarWidth,
			OKY: base - okH, OKHeight: okH,
			FailY: base - okH - failH, FailHeight: failH,
			// Every other day is labelled, and the last (today).
			ShowLabel: (len(h.Days)-1-i)%2 == 0,
		})
	}
	return c
}

// scaled is n's bar height on a chart whose top stands for top; a non-zero
// count is at least one unit high so that it shows.
func scaled(n, top int) int {
	if n == 0 {
		return 0
	}
	return max(1, n*chartPlot/top)
}

// MaxLabel is the chart's top, as text.
func (c historyChart) MaxLabel() string { return strconv.Itoa(c.Max) }

// Baseline is the y of the chart's zero line.
func (c historyChart) Baseline() int { return chartTop + chartPlot }

// LabelY is the y of the day labels.
func (c historyChart) LabelY() int { return chartTop + chartPlot + chartBottom - 4 }

// Mid is the x of the bar's middle, where its label is centred.
func (b historyBar) Mid() int { return b.X + b.Width/2 }
