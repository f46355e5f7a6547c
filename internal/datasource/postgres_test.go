package datasource_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestPostgresValuesAreJSONFriendly(t *testing.T) {
	t.Parallel()
	f := postgresFixture(t)
	f.exec(t, `CREATE TABLE kinds (
		id integer PRIMARY KEY, big bigint, amount numeric, ratio double precision, ok boolean,
		ref uuid, at timestamptz, local timestamp, day date, raw bytea, doc jsonb, tags text[],
		nums int[], span interval, addr inet, nan double precision, huge numeric)`)
	f.exec(t, `INSERT INTO kinds VALUES (1, 9007199254740993, 12345678901234567890.0123, 0.25, true,
		'7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f', '2024-05-06T07:08:09.123456Z', '2024-05-06 07:08:09', '2024-05-06',
		'\xdeadbeef', '{"a": [1, "x"]}', '{"x","y"}', '{1,2}', '1 day 02:00:00', '10.1.2.3/32', 'NaN', 'Infinity')`)
	f.exec(t, `INSERT INTO kinds (id) VALUES (2)`)

	cols := []string{"big", "amount", "ratio", "ok", "ref", "at", "local", "day", "raw", "doc", "tags", "nums", "span", "addr", "nan", "huge"}
	page, err := f.src.Select(context.Background(), datasource.SelectQuery{Table: "kinds", Columns: cols, OrderBy: byID})
	require.NoError(t, err)
	got, err := json.Marshal(page.Rows)
	require.NoError(t, err)
	require.JSONEq(t, `[
		[9007199254740993, 12345678901234567890.0123, 0.25, true, "7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f",
		 "2024-05-06T07:08:09.123456Z", "2024-05-06T07:08:09", "2024-05-06", "3q2+7w==", {"a": [1, "x"]},
		 ["x", "y"], [1, 2], "1 day 02:00:00", "10.1.2.3/32", "NaN", "Infinity"],
		[null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null]
	]`, string(got))
	require.Contains(t, string(got), "12345678901234567890.0123", "numeric keeps every digit")
}

// TestPostgresBadValuesAreInvalid: a value or a filter the column's type
// refuses is the caller's fault (400), told in terms of the columns the
// binding declared, never in the database's own words.
func TestPostgresBadValuesAreInvalid(t *testing.T) {
	t.Parallel()
	f := postgresFixture(t)
	f.exec(t, `CREATE TABLE typed (id integer PRIMARY KEY, ref uuid, at timestamptz, ok boolean, code varchar(3))`)
	ctx := context.Background()
	typed := func(filters map[string]any) datasource.SelectQuery {
		return datasource.SelectQuery{Table: "typed", Columns: []string{"id"}, Filters: filters}
	}
	cases := []struct {
		name    string
		run     func() error
		message string
	}{
		{"text into an integer column", func() error {
			_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(50), "name": "x", "qty": "many"}))
			return err
		}, `value for column "qty" does not fit its type`},
		{"fraction into an integer column", func() error {
			_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(51), "name": "y", "qty": 1.5}))
			return err
		}, `value for column "qty" does not fit its type`},
		{"object into a text column", func() error {
			_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(52), "name": map[string]any{"a": 1.0}}))
			return err
		}, `value for column "name" does not fit its type`},
		{"numeric overflow", func() error {
			_, err := f.src.Write(ctx, update(map[string]any{"id": float64(1), "price": 1e12}))
			return err
		}, "a value is out of range for its column's type"},
		{"string too long", func() error {
			_, err := f.src.Write(ctx, datasource.WriteStmt{Table: "typed", Mode: bindingspec.ModeInsert,
				Values: map[string]any{"id": float64(1), "code": "toolong"}})
			return err
		}, "a value is too long for its column"},
		{"text filter on an integer column", func() error {
			_, err := f.src.Select(ctx, inventory(map[string]any{"qty": "lots"}))
			return err
		}, `value for column "qty" does not fit its type`},
		{"abc filter on an integer key", func() error {
			_, err := f.src.Select(ctx, typed(map[string]any{"id": "abc"}))
			return err
		}, `value for column "id" does not fit its type`},
		{"x filter on a uuid column", func() error {
			_, err := f.src.Select(ctx, typed(map[string]any{"ref": "x"}))
			return err
		}, `value for column "ref" does not fit its type`},
		{"gt with a bad uuid", func() error {
			_, err := f.src.Select(ctx, typed(decoded(t, `{"ref": {"op": "gt", "value": "x"}}`)))
			return err
		}, `value for column "ref" does not fit its type`},
		{"bad timestamp beside a good filter", func() error {
			_, err := f.src.Select(ctx, typed(map[string]any{"at": "yesterday-ish", "id": float64(1)}))
			return err
		}, `value for column "at" does not fit its type`},
		{"text in an IN filter on an integer column", func() error {
			_, err := f.src.Select(ctx, inventory(map[string]any{"id": []any{"1", "x"}}))
			return err
		}, `value for column "id" does not fit its type`},
		{"like on an integer column", func() error {
			_, err := f.src.Select(ctx, typed(decoded(t, `{"id": {"op": "like", "value": "1%"}}`)))
			return err
		}, `filter "id": this comparison does not apply to the column's type`},
		{"ilike on a uuid column beside a text filter", func() error {
			_, err := f.src.Select(ctx, typed(decoded(t, `{"code": "abc", "ref": {"op": "ilike", "value": "7f%"}}`)))
			return err
		}, `filter "ref": this comparison does not apply to the column's type`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Equal(t, tc.message, msg)
			for _, dbWords := range []string{"invalid input syntax", "operator does not exist", "SQLSTATE", "integer", "uuid", "~~"} {
				require.NotContains(t, msg, dbWords)
			}
		})
	}
}

// TestPostgresMismatchKeepsTheDatabasesWords: a binding that does not match
// the database is the data source's fault (502) and the bundle learns no
// table, column or SQLSTATE of it; the operator's log does.
func TestPostgresMismatchKeepsTheDatabasesWords(t *testing.T) {
	t.Parallel()
	f := postgresFixture(t)
	_, err := f.src.Select(context.Background(), datasource.SelectQuery{Table: "secret_table", Columns: []string{"id"}})
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), "%v", err)
	_, _, msg := apperr.Public(err)
	require.Equal(t, "the data source rejected the query: the binding does not match the database", msg)
	require.Contains(t, err.Error(), "42P01", "the cause keeps the SQLSTATE")
}

func TestPostgresQueryTimeout(t *testing.T) {
	t.Parallel()
	f := postgresFixture(t)
	f.exec(t, `CREATE VIEW slow AS SELECT 1 AS id, pg_sleep(5)::text AS nap`)
	reg := datasource.NewRegistry(box(t), datasource.Options{QueryTimeout: 300 * time.Millisecond, Allow: testkit.Loopback})
	t.Cleanup(reg.Close)
	src, err := reg.Source(context.Background(), integration(t, datasource.KindPostgres, f.dsn))
	require.NoError(t, err)
	start := time.Now()
	_, err = src.Select(context.Background(), datasource.SelectQuery{Table: "slow", Columns: []string{"id"}})
	require.Equal(t, apperr.Timeout, apperr.CodeOf(err), "%v", err)
	require.Less(t, time.Since(start), 3*time.Second, "the query was stopped at the timeout")
}
