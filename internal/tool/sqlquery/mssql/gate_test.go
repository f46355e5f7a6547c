package mssql

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

func TestTokenize(t *testing.T) {
	t.Parallel()
	type tk struct {
		kind tokenKind
		text string
	}
	for _, tc := range []struct {
		q    string
		want []tk
	}{
		{"SELECT [a]]b;c], N'it''s; x', \"q\"\"d\" FROM dbo.t -- ; DELETE\nWHERE x = @p1 /* a /* nested ; */ comment */;",
			[]tk{{tokWord, "SELECT"}, {tokQuoted, "[a]]b;c]"}, {tokSymbol, ","}, {tokString, "N'it''s; x'"}, {tokSymbol, ","},
				{tokQuoted, `"q""d"`}, {tokWord, "FROM"}, {tokWord, "dbo"}, {tokSymbol, "."}, {tokWord, "t"}, {tokWord, "WHERE"},
				{tokWord, "x"}, {tokSymbol, "="}, {tokVariable, "@p1"}, {tokSemicolon, ";"}}},
		{"select 'a\\', 1.5e-3, 0x1F, .5, #tmp, @@ROWCOUNT, näme",
			[]tk{{tokWord, "select"}, {tokString, "'a\\'"}, {tokSymbol, ","}, {tokNumber, "1.5e-3"}, {tokSymbol, ","}, {tokNumber, "0x1F"},
				{tokSymbol, ","}, {tokNumber, ".5"}, {tokSymbol, ","}, {tokWord, "#tmp"}, {tokSymbol, ","}, {tokVariable, "@@ROWCOUNT"},
				{tokSymbol, ","}, {tokWord, "näme"}}},
		{"SELECT n'x', name'y'", []tk{{tokWord, "SELECT"}, {tokString, "n'x'"}, {tokSymbol, ","}, {tokWord, "name"}, {tokString, "'y'"}}},
	} {
		tokens, err := tokenize(tc.q)
		require.NoError(t, err, tc.q)
		got := make([]tk, len(tokens))
		for i, tok := range tokens {
			got[i] = tk{tok.kind, tok.text}
		}
		require.Equal(t, tc.want, got, tc.q)
	}
	for q, want := range map[string]string{
		"SELECT 'abc":                "unterminated string starting at byte 7",
		"SELECT 'it''s":              "unterminated string",
		"SELECT N'abc":               "unterminated string starting at byte 7",
		"SELECT [abc":                "unterminated quoted name starting at byte 7",
		"SELECT [a]]":                "unterminated quoted name",
		`SELECT "abc`:                "unterminated quoted name",
		"SELECT 1 /* a /* b */ c":    "unterminated /* comment starting at byte 9",
		"SELECT 1 /* one */ /* two ": "unterminated /* comment starting at byte 19",
	} {
		_, err := tokenize(q)
		var refused *sqlquery.Refused
		require.ErrorAs(t, err, &refused, q)
		require.Contains(t, refused.Reason, want, q)
	}
}

func TestGateAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q      string
		params int
	}{
		{"SELECT 1", 0},
		{"select id, name from dbo.invoices where status = @p1;", 1},
		{";WITH t AS (SELECT 1 AS x) SELECT x FROM t;;", 0},
		{"(SELECT 1) UNION (SELECT 2)", 0},
		{"SELECT TOP (10) i.id, c.name FROM dbo.invoices AS i WITH (NOLOCK) JOIN dbo.customers c ON c.id = i.customer_id WHERE i.total > @p2 AND c.region = @P1 ORDER BY 1", 2},
		{"SELECT [into], [delete], [go] FROM dbo.t WHERE [update] = @p1", 1},
		{"SELECT [a]]b;c] FROM dbo.t", 0},
		// One name, "a]; DELETE FROM t; SELECT [b", as SQL Server reads it too.
		{"SELECT [a]]; DELETE FROM t; SELECT [b] FROM t", 0},
		{"SELECT N'it''s; insert' FROM dbo.t", 0},
		{"SELECT 'exec xp_cmdshell ''x''; drop table t' AS s", 0},
		{`SELECT "insert", "a""; delete" FROM t`, 0},
		{"SELECT 1 /* ; delete /* nested ; */ still ; */ FROM t -- ; drop\n", 0},
		{"SELECT @@VERSION, @@ROWCOUNT", 0},
		{"SELECT * FROM #tmp", 0},
		{"SELECT a FROM t FOR JSON PATH", 0},
		{"SELECT COUNT(*) OVER (PARTITION BY a) FROM t", 0},
		{"SELECT x FROM t WHERE y IN (@p1, @p3)", 3},
	} {
		st, err := Check(tc.q)
		require.NoError(t, err, tc.q)
		require.Equal(t, tc.params, st.Params, tc.q)
	}
}

func TestGateRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ q, reason string }{
		{"", "is empty"},
		{" ; ;", "is empty"},
		{"-- only a comment", "is empty"},
		{"/* only */ /* comments */", "is empty"},
		{"SELECT 1; DROP TABLE t", "must be one statement: it goes on after the ';' at byte 8"},
		{"SELECT 1; SELECT 2", "must be one statement"},
		{"SELECT 1\nGO\nDROP TABLE t", "must be read-only: GO separates batches"},
		{"SELECT 1\ngo", "GO separates batches"},
		{"DELETE FROM t", "must be a SELECT or WITH statement, not DELETE"},
		{"EXEC sp_who", "not EXEC"},
		{"xp_cmdshell 'dir'", "not XP_CMDSHELL"},
		{"( (", "must be a SELECT or WITH statement, not this"},
		{"[SELECT] 1", "must be a SELECT or WITH statement"},
		{"SELECT * INTO x FROM t", "must be read-only: INTO creates a table (SELECT … INTO)"},
		{"SELECT * INTO #x FROM t", "INTO creates a table"},
		{"WITH d AS (SELECT 1 AS a) DELETE FROM t", "must be read-only: DELETE changes data"},
		{"WITH d AS (SELECT 1 AS a) UPDATE t SET a = 1", "UPDATE changes data"},
		{"WITH d AS (SELECT 1 AS a) MERGE t USING d ON 1 = 1 WHEN MATCHED THEN DELETE;", "MERGE changes data"},
		{"SELECT * FROM t WITH (UPDLOCK)", "must be read-only: UPDLOCK locks rows"},
		{"SELECT * FROM t WITH (TABLOCKX, HOLDLOCK)", "TABLOCKX locks rows"},
		{"SELECT * FROM OPENROWSET('SQLNCLI', 'Server=x;', 'DELETE FROM t')", "OPENROWSET reaches another server"},
		{"SELECT * FROM OPENQUERY(linked, 'UPDATE t SET a = 1')", "OPENQUERY reaches another server"},
		{"SELECT 1 WAITFOR DELAY '00:10'", "WAITFOR only holds a connection"},
		{"SELECT NEXT VALUE FOR dbo.seq", "NEXT VALUE FOR changes a sequence"},
		{"SELECT 1 /* /* */ ' */; DELETE FROM t; SELECT 1 AS x --'", "must be one statement"},
		{"SELECT 'a\\'; DELETE FROM t; SELECT '\\'", "must be one statement"},
		{"SELECT [x] FROM t; EXEC sp_who", "must be one statement"},
		{"SELECT @x", "may not use the variable @x"},
		{"SELECT @p0", "may not use the variable @p0"},
		{"SELECT 1 SET NOCOUNT ON", "SET changes the session"},
		{"SELECT 1 BEGIN TRAN", "BEGIN controls the transaction"},
		{"SELECT 1 COMMIT", "COMMIT controls the transaction"},
		{"SELECT a FROM t; ", ""},
	} {
		_, err := Check(tc.q)
		if tc.reason == "" {
			require.NoError(t, err, tc.q)
			continue
		}
		var refused *sqlquery.Refused
		require.ErrorAs(t, err, &refused, tc.q)
		require.Contains(t, refused.Reason, tc.reason, tc.q)
	}
}

func FuzzTokenize(f *testing.F) {
	for _, q := range []string{"SELECT [a]]b] FROM t", "SELECT N'x''y' /* /* */ */ -- c", "SELECT @p1; DROP TABLE t"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		tokens, err := tokenize(q)
		if err != nil {
			return
		}
		// Tokens are in order, do not overlap, and each is the text at its offset.
		end := 0
		for _, tok := range tokens {
			require.GreaterOrEqual(t, tok.pos, end)
			require.Equal(t, tok.text, q[tok.pos:tok.pos+len(tok.text)])
			end = tok.pos + len(tok.text)
		}
		_, _ = Check(q)
	})
}
