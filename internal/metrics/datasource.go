package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Data-source statements, the label values of ObserveDataSource.
const (
	StatementSelect   = "select"
	StatementWrite    = "write"
	StatementBegin    = "begin"
	StatementCommit   = "commit"
	StatementRollback = "rollback"
)

var (
	dsDrivers    = []string{"postgres", "sqlite", Other}
	dsStatements = []string{StatementSelect, StatementWrite, StatementBegin, StatementCommit, StatementRollback, Other}
	dsOutcomes   = []string{"ok", "error"}
)

// dataSourceMetrics is the statement histogram with a cached child per
// (driver, statement, outcome).
type dataSourceMetrics struct {
	vec   *prometheus.HistogramVec
	cache observerCache
}

func newDataSourceMetrics(reg prometheus.Registerer) dataSourceMetrics {
	d := dataSourceMetrics{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "datasource_query_duration_seconds",
		Help:    "Statements on a binding's data source (the customer's database), by driver, statement and outcome.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"driver", "statement", "outcome"})}
	d.cache = newObserverCache(d.vec, len(dsDrivers)*len(dsStatements)*len(dsOutcomes))
	reg.MustRegister(d.vec)
	return d
}

func indexOf(set []string, v string) int {
	for i, s := range set {
		if s == v {
			return i
		}
	}
	return len(set) - 1 // Other is last
}

// ObserveDataSource records one statement on a data source: driver is the
// integration kind (postgres, sqlite), statement one of the Statement
// constants, failed whether it returned an error, d its duration.
func (m *Metrics) ObserveDataSource(driver, statement string, failed bool, d time.Duration) {
	if m == nil {
		return
	}
	out := 0
	if failed {
		out = 1
	}
	di, si := indexOf(dsDrivers, driver), indexOf(dsStatements, statement)
	m.ds.cache.observe((di*len(dsStatements)+si)*len(dsOutcomes)+out, d.Seconds(), func() []string {
		return []string{dsDrivers[di], dsStatements[si], dsOutcomes[out]}
	})
}
