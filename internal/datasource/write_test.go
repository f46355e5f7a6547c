package datasource_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
)

func insert(values map[string]any) datasource.WriteStmt {
	return datasource.WriteStmt{Table: "inventory", Mode: bindingspec.ModeInsert, Values: values}
}

func update(values map[string]any) datasource.WriteStmt {
	return datasource.WriteStmt{Table: "inventory", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Values: values}
}

func upsert(values map[string]any) datasource.WriteStmt {
	return datasource.WriteStmt{Table: "inventory", Mode: bindingspec.ModeUpsert, KeyColumns: []string{"id"}, Values: values}
}

func TestWriteModes(t *testing.T) {
	t.Parallel()
	forEachSource(t, func(t *testing.T, f fixture) {
		ctx := context.Background()
		n, err := f.src.Write(ctx, insert(map[string]any{"id": float64(10), "name": "eggplant", "qty": float64(3), "tag": "veg"}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory", "id = 10 AND name = 'eggplant' AND qty = 3"))

		n, err = f.src.Write(ctx, update(map[string]any{"id": float64(10), "qty": float64(7)}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory", "id = 10 AND qty = 7 AND name = 'eggplant'"), "update sets only the given columns")

		n, err = f.src.Write(ctx, update(map[string]any{"id": float64(999), "qty": float64(7)}))
		require.NoError(t, err)
		require.Zero(t, n, "updating a missing row affects none")

		n, err = f.src.Write(ctx, upsert(map[string]any{"id": float64(10), "name": "aubergine", "qty": float64(1)}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory", "id = 10 AND name = 'aubergine' AND qty = 1 AND tag = 'veg'"),
			"upsert of an existing key updates the given columns and keeps the others")

		n, err = f.src.Write(ctx, upsert(map[string]any{"id": float64(11), "name": "fennel"}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory", "id = 11 AND name = 'fennel'"), "upsert of a new key inserts")

		// The runtime binds integral JSON numbers as int64.
		n, err = f.src.Write(ctx, insert(map[string]any{"id": int64(12), "name": "gourd", "qty": int64(2), "tag": int64(7)}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory", "id = 12 AND qty = 2 AND tag = '7'"), "a number into a text column is stored as its text")
		require.Equal(t, []int64{12}, ids(t, f.src, inventory(map[string]any{"qty": int64(2), "tag": []any{int64(7)}})))

		label := datasource.WriteStmt{Table: "labels", Mode: bindingspec.ModeUpsert, KeyColumns: []string{"name"},
			Values: map[string]any{"name": "urgent"}}
		n, err = f.src.Write(ctx, label)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = f.src.Write(ctx, label)
		require.NoError(t, err)
		require.Zero(t, n, "an upsert of only the key leaves an existing row alone")
		require.Equal(t, 1, f.count(t, "labels", "name = 'urgent'"))

		notes := datasource.WriteStmt{Table: "inventory_notes", Mode: bindingspec.ModeInsert,
			Values: map[string]any{"item_id": float64(1), "body": "ripe", "meta": map[string]any{"by": "reviewer", "score": 3.5}}}
		n, err = f.src.Write(ctx, notes)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory_notes", "item_id = 1 AND body = 'ripe' AND meta IS NOT NULL"))
	})
}

func TestWriteInjectionStaysAValue(t *testing.T) {
	t.Parallel()
	forEachSource(t, func(t *testing.T, f fixture) {
		ctx := context.Background()
		evil := `x', 0, 0, 'y'); DELETE FROM inventory; --`
		_, err := f.src.Write(ctx, insert(map[string]any{"id": float64(20), "name": evil}))
		require.NoError(t, err)
		n, err := f.src.Write(ctx, update(map[string]any{"id": "20 OR 1=1", "tag": "gone"}))
		if err != nil {
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "Postgres refuses a key that is not an integer: %v", err)
		} else {
			require.Zero(t, n, "SQLite compares the whole string and matches nothing")
		}
		require.Equal(t, 6, f.count(t, "inventory", "1 = 1"))
		require.Equal(t, 0, f.count(t, "inventory", "tag = 'gone'"))
		page, err := f.src.Select(ctx, datasource.SelectQuery{Table: "inventory", Columns: []string{"name"}, Filters: map[string]any{"id": 20}})
		require.NoError(t, err)
		require.Equal(t, [][]any{{evil}}, page.Rows)
	})
}

func TestWriteRefusals(t *testing.T) {
	t.Parallel()
	forEachSource(t, func(t *testing.T, f fixture) {
		cases := []struct {
			name    string
			stmt    datasource.WriteStmt
			message string
		}{
			{"no values", insert(map[string]any{}), "write to inventory: no values"},
			{"update without its key", update(map[string]any{"qty": float64(1)}), `key column "id" is required`},
			{"upsert without its key", upsert(map[string]any{"name": "x"}), `key column "id" is required`},
			{"null key", update(map[string]any{"id": nil, "qty": float64(1)}), `key column "id" must not be null`},
			{"update of only the key", update(map[string]any{"id": float64(1)}), "nothing to update"},
			// The database's own words (constraint and table names, its
			// phrasing) never reach the bundle; declared columns may.
			{"unique violation", insert(map[string]any{"id": float64(30), "name": "apple"}), `a row with the same "name" already exists`},
			{"not-null violation", insert(map[string]any{"id": float64(31), "name": nil}), `column "name" must not be null`},
			{"not-null column the op does not write", datasource.WriteStmt{Table: "inventory_notes", Mode: bindingspec.ModeInsert,
				Values: map[string]any{"item_id": float64(1)}}, "the table needs a value for a column this op does not write"},
			{"check violation", update(map[string]any{"id": float64(1), "qty": float64(-1)}), "a value breaks a check of the table"},
			{"duplicate primary key", insert(map[string]any{"id": float64(1), "name": "other"}), `a row with the same "id" already exists`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.src.Write(context.Background(), tc.stmt)
				require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
				_, _, msg := apperr.Public(err)
				require.Contains(t, msg, tc.message)
				for _, dbWords := range []string{"constraint", "violates", "qty_not_negative", "body", "SQLSTATE"} {
					require.NotContains(t, msg, dbWords)
				}
			})
		}
		require.Equal(t, 5, f.count(t, "inventory", "1 = 1"), "no refused write changed a row")
	})
}

func TestTransactions(t *testing.T) {
	t.Parallel()
	forEachSource(t, func(t *testing.T, f fixture) {
		ctx := context.Background()

		tx, err := f.src.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Write(ctx, insert(map[string]any{"id": float64(40), "name": "kale"}))
		require.NoError(t, err)
		_, err = tx.Write(ctx, update(map[string]any{"id": float64(1), "qty": float64(99)}))
		require.NoError(t, err)
		require.NoError(t, tx.Rollback(ctx))
		require.Equal(t, 0, f.count(t, "inventory", "id = 40 OR qty = 99"), "rollback discards every write")

		tx, err = f.src.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Write(ctx, insert(map[string]any{"id": float64(41), "name": "leek"}))
		require.NoError(t, err)
		n, err := tx.Write(ctx, update(map[string]any{"id": float64(1), "qty": float64(98)}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.NoError(t, tx.Commit(ctx))
		require.NoError(t, tx.Rollback(ctx), "rollback after commit does nothing")
		require.Equal(t, 2, f.count(t, "inventory", "id = 41 OR qty = 98"), "commit keeps every write")

		tx, err = f.src.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Write(ctx, insert(map[string]any{"id": float64(42), "name": "mint"}))
		require.NoError(t, err)
		_, err = tx.Write(ctx, insert(map[string]any{"id": float64(43), "name": "apple"}))
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
		require.NoError(t, tx.Rollback(ctx))
		require.Equal(t, 0, f.count(t, "inventory", "id IN (42, 43)"), "a failed write rolls back its siblings")
	})
}

// TestValuesMustFitTheirColumns: a value its column's type cannot hold is
// the bundle's 400 naming the column, on Postgres (the server's type) and
// on SQLite (the column's affinity, which SQLite itself does not enforce)
// alike; a number sent as a numeric string still fits.
func TestValuesMustFitTheirColumns(t *testing.T) {
	t.Parallel()
	forEachSource(t, func(t *testing.T, f fixture) {
		ctx := context.Background()
		for _, tc := range []struct {
			name    string
			filters map[string]any
			column  string
		}{
			{"text for an integer", decoded(t, `{"qty": "abc"}`), "qty"},
			{"text in an in list", decoded(t, `{"id": [1, "two"]}`), "id"},
			{"text for a comparison", decoded(t, `{"price": {"op": "gt", "value": "cheap"}}`), "price"},
			{"a boolean for an integer", decoded(t, `{"id": true}`), "id"},
		} {
			_, err := f.src.Select(ctx, inventory(tc.filters))
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%s: %v", tc.name, err)
			_, _, msg := apperr.Public(err)
			require.Equal(t, `value for column "`+tc.column+`" does not fit its type`, msg, tc.name)
		}
		page, err := f.src.Select(ctx, inventory(decoded(t, `{"id": "3"}`)))
		require.NoError(t, err, "a numeric string")
		require.Len(t, page.Rows, 1)

		for _, tc := range []struct {
			name   string
			values map[string]any
			column string
		}{
			{"text for a number", map[string]any{"id": json.Number("1"), "price": "lots"}, "price"},
			{"text for an integer", map[string]any{"id": json.Number("1"), "qty": "many"}, "qty"},
		} {
			_, err := f.src.Write(ctx, update(tc.values))
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%s: %v", tc.name, err)
			_, _, msg := apperr.Public(err)
			require.Equal(t, `value for column "`+tc.column+`" does not fit its type`, msg, tc.name)
		}
		n, err := f.src.Write(ctx, update(map[string]any{"id": json.Number("1"), "qty": json.Number("7")}))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, 1, f.count(t, "inventory", "id = 1 AND qty = 7"))
	})
}
