package models_test

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// probeDDL is a table with the column types the migrations give JSON
// documents and times on each dialect.
var probeDDL = map[config.Dialect]string{
	config.Postgres: `CREATE TABLE scan_probe (id integer PRIMARY KEY, doc jsonb, at timestamptz NOT NULL)`,
	config.SQLite:   `CREATE TABLE scan_probe (id INTEGER PRIMARY KEY, doc JSON, at DATETIME NOT NULL)`,
}

type scanProbe struct {
	ID  int
	Doc models.JSON
	At  time.Time
}

func (scanProbe) TableName() string { return "scan_probe" }

// TestJSONAndTimesScanOnEachDialect stores every kind of JSON document and
// reads it back, through the model and through raw queries that compute a
// time: SQLite gives a JSON column NUMERIC affinity (a bare number comes back
// as an int64 or a float64) and a computed time as text, which made the dev
// mode's task pages and overview 500s.
func TestJSONAndTimesScanOnEachDialect(t *testing.T) {
	t.Parallel()
	docs := []string{`42`, `-7`, `1.5`, `1e-7`, `"ACME Corp"`, `"42"`, `true`, `false`, `null`,
		`{"total_amount": 1234.5, "lines": [1, 2], "ok": true}`, `[1, "two", null]`,
		// Numbers SQLite's NUMERIC affinity would change: past int64 (to a
		// REAL, digits lost), past float64 (to +Inf, unscannable), and the
		// digits as written.
		`12345678901234567890`, `1e400`, `-1e400`, `1.50`, `-0`, `1E2`, ` 7 `}
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		require.NoError(t, st.DB.Exec(probeDDL[st.Dialect]).Error)
		base := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
		for i, d := range docs {
			require.NoError(t, st.DB.Create(&scanProbe{ID: i + 1, Doc: models.JSON(d), At: base.Add(time.Duration(i) * time.Hour)}).Error)
		}
		require.NoError(t, st.DB.Create(&scanProbe{ID: 100, At: base.Add(time.Hour)}).Error) // SQL NULL

		var got []scanProbe
		require.NoError(t, st.DB.Order("id").Find(&got).Error)
		require.Len(t, got, len(docs)+1)
		for i, d := range docs {
			requireSameJSON(t, d, string(got[i].Doc), "document %d", i)
			require.True(t, base.Add(time.Duration(i)*time.Hour).Equal(got[i].At))
		}
		require.Nil(t, got[len(docs)].Doc)

		var raw []struct {
			Doc models.JSON
			At  models.Timestamp
		}
		require.NoError(t, st.DB.Raw(`SELECT doc, at FROM scan_probe ORDER BY id`).Scan(&raw).Error)
		for i, d := range docs {
			requireSameJSON(t, d, string(raw[i].Doc), "raw document %d", i)
			require.True(t, base.Add(time.Duration(i)*time.Hour).Equal(raw[i].At.Time), "raw %d: %v", i, raw[i].At)
		}

		var agg struct {
			Oldest, Newest models.Timestamp
			Missing        models.Timestamp
		}
		require.NoError(t, st.DB.Raw(`SELECT min(at) AS oldest, max(at) AS newest,
			(SELECT min(at) FROM scan_probe WHERE id < 0) AS missing FROM scan_probe`).Scan(&agg).Error)
		require.True(t, base.Equal(agg.Oldest.Time), "min(at) = %v", agg.Oldest)
		require.True(t, base.Add(time.Duration(len(docs)-1)*time.Hour).Equal(agg.Newest.Time), "max(at) = %v", agg.Newest)
		require.True(t, agg.Missing.IsZero())

		// The review claim's shape: an UPDATE whose RETURNING computes a
		// time in a subquery, and a count.
		var updated []struct {
			ID     int
			At     models.Timestamp
			Oldest models.Timestamp
			Probes int64
		}
		require.NoError(t, st.DB.Raw(`UPDATE scan_probe SET doc = doc WHERE id = 2
			RETURNING id, at, (SELECT min(at) FROM scan_probe) AS oldest, (SELECT count(*) FROM scan_probe) AS probes`).Scan(&updated).Error)
		require.Len(t, updated, 1)
		require.True(t, base.Add(time.Hour).Equal(updated[0].At.Time), "RETURNING at = %v", updated[0].At)
		require.True(t, base.Equal(updated[0].Oldest.Time), "RETURNING (SELECT min(at)) = %v", updated[0].Oldest)
		require.EqualValues(t, len(docs)+1, updated[0].Probes)

		var returned []scanProbe
		require.NoError(t, st.DB.Raw(`DELETE FROM scan_probe WHERE id = 1 RETURNING id, doc, at`).Scan(&returned).Error)
		require.Len(t, returned, 1)
		require.True(t, base.Equal(returned[0].At), "RETURNING at = %v", returned[0].At)
		require.JSONEq(t, `42`, string(returned[0].Doc))
	})
}

// requireSameJSON asserts that two documents hold the same values, numbers
// compared exactly (JSONEq reads them as float64, which would call
// 12345678901234567890 and 12345678901234567000 the same, and refuses 1e400).
func requireSameJSON(t *testing.T, want, got string, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, exactJSON(t, want), exactJSON(t, got), msgAndArgs...)
}

// exactJSON decodes doc with its numbers as exact rationals.
func exactJSON(t *testing.T, doc string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), doc)
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(x.String())
			require.True(t, ok, x)
			return "number " + r.RatString()
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	return walk(v)
}

// TestParseTimestampLayouts reads the text forms SQLite databases hold times in.
func TestParseTimestampLayouts(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, s := range []string{
		"2026-03-04 05:06:07+00:00",
		"2026-03-04 06:06:07+01:00",
		"2026-03-04 05:06:07 +0000 UTC",
		"2026-03-04 05:06:07 +0000 UTC m=+0.000000001",
		"2026-03-04T05:06:07Z",
		"2026-03-04T05:06:07",
		"2026-03-04 05:06:07",
		"2026-03-04 05:06:07.000",
	} {
		var ts models.Timestamp
		require.NoError(t, ts.Scan(s), s)
		require.True(t, want.Equal(ts.Time), "%s: %v", s, ts.Time)
		require.NoError(t, ts.Scan([]byte(s)), s)
		require.True(t, want.Equal(ts.Time), "%s: %v", s, ts.Time)
	}
	var ts models.Timestamp
	require.Error(t, ts.Scan("yesterday"))
	require.Error(t, ts.Scan(42))
	var j models.JSON
	require.Error(t, j.Scan(time.Now()))
}
