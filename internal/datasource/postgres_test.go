package datasource_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/datasource"
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

func TestPostgresBadValuesAreInvalid(t *testing.T) {
	t.Parallel()
	f := postgresFixture(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		run     func() error
		message string
	}{
		{"text into an integer column", func() error {
			_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(50), "name": "x", "qty": "many"}))
			return err
		}, `invalid input syntax for type integer: "many"`},
		{"fraction into an integer column", func() error {
			_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(51), "name": "y", "qty": 1.5}))
			return err
		}, `invalid input syntax for type integer: "1.5"`},
		{"object into a text column", func() error {
			_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(52), "name": map[string]any{"a": 1.0}}))
			return err
		}, `value for column "name" does not fit its type`},
		{"numeric overflow", func() error {
			_, err := f.src.Write(ctx, update(map[string]any{"id": float64(1), "price": 1e12}))
			return err
		}, "numeric field overflow"},
		{"text filter on an integer column", func() error {
			_, err := f.src.Select(ctx, inventory(map[string]any{"qty": "lots"}))
			return err
		}, `invalid input syntax for type integer: "lots"`},
		{"text in an IN filter on an integer column", func() error {
			_, err := f.src.Select(ctx, inventory(map[string]any{"id": []any{"1", "x"}}))
			return err
		}, `invalid input syntax for type integer`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tc.message)
		})
	}
}

func TestPostgresUnreachableIsBadGateway(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t)
	src, err := reg.Source(context.Background(), integration(t, datasource.KindPostgres,
		"postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=2"))
	require.NoError(t, err, "a pool opens without dialing")
	_, err = src.Select(context.Background(), inventory(nil))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), "%v", err)
	_, _, msg := apperr.Public(err)
	require.NotContains(t, msg, "secret", "the DSN's password never reaches a reply")
}

func TestPostgresQueryTimeout(t *testing.T) {
	t.Parallel()
	f := postgresFixture(t)
	f.exec(t, `CREATE VIEW slow AS SELECT 1 AS id, pg_sleep(5)::text AS nap`)
	reg := datasource.NewRegistry(box(t), datasource.Options{QueryTimeout: 300 * time.Millisecond})
	t.Cleanup(reg.Close)
	src, err := reg.Source(context.Background(), integration(t, datasource.KindPostgres, f.dsn))
	require.NoError(t, err)
	start := time.Now()
	_, err = src.Select(context.Background(), datasource.SelectQuery{Table: "slow", Columns: []string{"id"}})
	require.Equal(t, apperr.Timeout, apperr.CodeOf(err), "%v", err)
	require.Less(t, time.Since(start), 3*time.Second, "the query was stopped at the timeout")
}
