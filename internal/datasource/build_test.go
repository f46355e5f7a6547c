package datasource

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
)

func TestBuiltSQL(t *testing.T) {
	t.Parallel()
	q := SelectQuery{
		Table: "sales.invoices", Columns: []string{"id", `we"ird`},
		Filters: map[string]any{
			"status": []any{"open", "held"},
			"vendor": map[string]any{"op": "ilike", "value": "%acme%"},
			"amount": map[string]any{"op": "gte", "value": 10.0},
			"note":   nil,
		},
		FixedFilters: map[string]any{"status": "open"},
		OrderBy:      []bindingspec.Order{{Column: "amount", Desc: true}, {Column: "id"}},
		Limit:        20, Offset: 40,
	}
	st, args, err := postgresDialect.buildSelect(q, 20)
	require.NoError(t, err)
	require.Equal(t, `SELECT "id", "we""ird" FROM "sales"."invoices" WHERE "amount" >= $1 AND "note" IS NULL AND "status" = $2 AND "status" = ANY($3) AND "vendor" ILIKE $4 ORDER BY "amount" DESC, "id" ASC LIMIT 21 OFFSET $5`, st.sql)
	require.Equal(t, []any{"10", "open", []any{"open", "held"}, "%acme%", 40}, args, "Postgres gets numbers as text")
	require.Equal(t, []string{"amount", "status", "status", "vendor", ""}, st.argCols)

	st, args, err = sqliteDialect.buildSelect(q, 20)
	require.NoError(t, err)
	require.Equal(t, "SELECT `id`, `we\"ird` FROM `sales`.`invoices` WHERE `amount` >= ? AND `note` IS NULL AND `status` = ? AND `status` IN (?, ?) AND `vendor` LIKE ? ORDER BY `amount` DESC, `id` ASC LIMIT 21 OFFSET ?", st.sql)
	require.Equal(t, []any{10.0, "open", "open", "held", "%acme%", 40}, args)

	// The first page has no OFFSET at all.
	q.Offset = 0
	st, args, err = postgresDialect.buildSelect(q, 20)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(st.sql, ` ORDER BY "amount" DESC, "id" ASC LIMIT 21`), st.sql)
	require.Len(t, args, 4)

	w := WriteStmt{Table: "invoices", Mode: bindingspec.ModeUpsert, KeyColumns: []string{"id"},
		Values: map[string]any{"id": 1.0, "status": "paid", "meta": map[string]any{"a": 1.0}, "note": json.Number("12.50")}}
	st, args, err = postgresDialect.buildWrite(w)
	require.NoError(t, err)
	require.Equal(t, `INSERT INTO "invoices" ("id", "meta", "note", "status") VALUES ($1, $2, $3, $4) ON CONFLICT ("id") DO UPDATE SET "meta" = excluded."meta", "note" = excluded."note", "status" = excluded."status"`, st.sql)
	require.Equal(t, []any{"1", map[string]any{"a": 1.0}, "12.50", "paid"}, args)
	st, args, err = sqliteDialect.buildWrite(w)
	require.NoError(t, err)
	require.Equal(t, "INSERT INTO `invoices` (`id`, `meta`, `note`, `status`) VALUES (?, ?, ?, ?) ON CONFLICT (`id`) DO UPDATE SET `meta` = excluded.`meta`, `note` = excluded.`note`, `status` = excluded.`status`", st.sql)
	require.Equal(t, []any{1.0, `{"a":1}`, "12.50", "paid"}, args, "SQLite gets objects as JSON text")

	w.Mode = bindingspec.ModeUpdate
	st, args, err = postgresDialect.buildWrite(w)
	require.NoError(t, err)
	require.Equal(t, `UPDATE "invoices" SET "meta" = $1, "note" = $2, "status" = $3 WHERE "id" = $4`, st.sql)
	require.Equal(t, "1", args[3])

	w.Mode = bindingspec.ModeInsert
	st, _, err = sqliteDialect.buildWrite(w)
	require.NoError(t, err)
	require.Equal(t, "INSERT INTO `invoices` (`id`, `meta`, `note`, `status`) VALUES (?, ?, ?, ?)", st.sql)
}

func TestBuiltSQLIsCachedPerShape(t *testing.T) {
	t.Parallel()
	q := SelectQuery{Table: "cache_probe", Columns: []string{"a"}, Filters: map[string]any{"a": 1.0}}
	first, _, err := postgresDialect.buildSelect(q, 10)
	require.NoError(t, err)
	q.Filters = map[string]any{"a": "other value"}
	second, args, err := postgresDialect.buildSelect(q, 10)
	require.NoError(t, err)
	require.Same(t, first, second, "the same shape reuses the built statement")
	require.Equal(t, []any{"other value"}, args, "the new value is bound")

	q.Filters = map[string]any{"a": []any{1.0}}
	third, _, err := postgresDialect.buildSelect(q, 10)
	require.NoError(t, err)
	require.NotSame(t, first, third, "another filter shape is another statement")
	q.Filters = map[string]any{"a": 1.0}
	other, _, err := postgresDialect.buildSelect(q, 20)
	require.NoError(t, err)
	require.NotSame(t, first, other, "another page size is another statement")
	q.Offset = 10
	later, _, err := postgresDialect.buildSelect(q, 10)
	require.NoError(t, err)
	require.NotSame(t, first, later, "a page after the first is another statement")

	// Identifier lists that would run together without length prefixes.
	q1 := SelectQuery{Table: "t", Columns: []string{"a", "b"}}
	q2 := SelectQuery{Table: "t", Columns: []string{"a\x02\x01b"}}
	s1, _, err := sqliteDialect.buildSelect(q1, 1)
	require.NoError(t, err)
	s2, _, err := sqliteDialect.buildSelect(q2, 1)
	require.NoError(t, err)
	require.NotEqual(t, s1.sql, s2.sql)
}

func TestBadIdentifiers(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "a\x00b", "\xff"} {
		_, _, err := postgresDialect.buildSelect(SelectQuery{Table: "t", Columns: []string{name}}, 1)
		require.Error(t, err, "%q", name)
		_, _, err = sqliteDialect.buildWrite(WriteStmt{Table: "t", Mode: bindingspec.ModeInsert, Values: map[string]any{name: 1}})
		require.Error(t, err, "%q", name)
	}
}

// readIdent reads the quoted identifier at the start of s and returns its
// name and what follows it; ok is false when s does not start with one.
func readIdent(s string, quote byte) (name, rest string, ok bool) {
	if s == "" || s[0] != quote {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != quote {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == quote {
			b.WriteByte(quote)
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", s, false
}

// FuzzSelectSQL checks, for any identifiers and values, that each identifier
// reads back as exactly one quoted identifier and that the SQL text does not
// depend on the values at all (so no value is ever part of it).
func FuzzSelectSQL(f *testing.F) {
	f.Add("invoices", "status", "open", "x", uint8(0))
	f.Add(`t"; DROP TABLE x; --`, "c`", "' OR 1=1 --", "$1", uint8(3))
	f.Add("a", `"`, `\`, "?", uint8(8))
	ops := []string{"eq", "ne", "lt", "lte", "gt", "gte", "like", "ilike", "in", "is_null"}
	f.Fuzz(func(t *testing.T, table, column, v1, v2 string, op uint8) {
		if strings.Contains(table, ".") || checkIdent(table) != nil || checkIdent(column) != nil {
			return
		}
		filter := func(v string) map[string]any {
			name := ops[int(op)%len(ops)]
			switch name {
			case "in":
				return map[string]any{column: map[string]any{"op": name, "value": []any{v}}}
			case "is_null":
				return map[string]any{column: map[string]any{"op": name, "value": true}}
			}
			return map[string]any{column: map[string]any{"op": name, "value": v}}
		}
		for _, d := range []*dialect{postgresDialect, sqliteDialect} {
			q := SelectQuery{Table: table, Columns: []string{column}, Filters: filter(v1)}
			st1, args, err := d.buildSelect(q, 5)
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			q.Filters = filter(v2)
			st2, _, err := d.buildSelect(q, 5)
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			if st1.sql != st2.sql {
				t.Fatalf("%s: SQL depends on a value:\n%s\n%s", d.name, st1.sql, st2.sql)
			}
			if len(args) != len(st1.argCols) {
				t.Fatalf("%s: %d arguments for %d placeholders", d.name, len(args), len(st1.argCols))
			}
			rest, ok := strings.CutPrefix(st1.sql, "SELECT ")
			name, rest, ok2 := readIdent(rest, d.quote)
			if !ok || !ok2 || name != column {
				t.Fatalf("%s: column %q does not read back from %s", d.name, column, st1.sql)
			}
			rest, ok = strings.CutPrefix(rest, " FROM ")
			name, rest, ok2 = readIdent(rest, d.quote)
			if !ok || !ok2 || name != table {
				t.Fatalf("%s: table %q does not read back from %s", d.name, table, st1.sql)
			}
			rest, ok = strings.CutPrefix(rest, " WHERE ")
			name, _, ok2 = readIdent(rest, d.quote)
			if !ok || !ok2 || name != column {
				t.Fatalf("%s: filter column %q does not read back from %s", d.name, column, st1.sql)
			}
		}
	})
}

// BenchmarkBuildSelect is the hot path's SQL cost for a cached shape: the
// filters are parsed and bound, the text comes from the cache.
func BenchmarkBuildSelect(b *testing.B) {
	q := SelectQuery{Table: "invoices", Columns: []string{"id", "vendor", "amount", "status"},
		Filters:      map[string]any{"status": "pending", "vendor": []any{"ACME", "Globex"}},
		FixedFilters: map[string]any{"task_id": "t-1"},
		OrderBy:      []bindingspec.Order{{Column: "id"}}, Limit: 50}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := postgresDialect.buildSelect(q, 50); err != nil {
			b.Fatal(err)
		}
	}
}
