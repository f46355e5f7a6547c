package mssql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/mssql"
	"github.com/appruntime/appruntime/models"
)

// No SQL Server is reachable here: these tests cover what happens before
// and around the server, the gate itself is tested on the tokenizer.

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func call(t *testing.T, box *crypt.Box, dsn, query, input string) tool.Call {
	t.Helper()
	sealed, err := box.SealJSON(sqlquery.Secrets{DSN: dsn})
	require.NoError(t, err)
	return tool.Call{
		BaseTool:    models.BaseMSSQLQuery,
		Tool:        &models.ConfiguredTool{DisplayName: "Orders", BaseTool: models.BaseMSSQLQuery, Config: models.MustJSON(map[string]string{"query": query})},
		Integration: &models.Integration{ID: models.NewID(), Name: "erp", Kind: mssql.IntegrationKind, SecretsEnc: sealed},
		Input:       json.RawMessage(input),
	}
}

// listener accepts connections on loopback and closes them at once,
// counting them: a server that is not SQL Server.
func listener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), &n
}

func TestRunChecksBeforeConnecting(t *testing.T) {
	t.Parallel()
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	addr, hits := listener(t)
	host, port, _ := net.SplitHostPort(addr)
	dsn := fmt.Sprintf("sqlserver://reader:s3cret@%s:%s?database=erp&dial+timeout=2", host, port)
	ex := mssql.New(box, mssql.Options{Guard: datasource.Guard{Allow: loopback}})
	t.Cleanup(ex.Close)

	for _, tc := range []struct {
		query, input string
		code         apperr.Code
		want         string
	}{
		{"DELETE FROM dbo.orders", `{}`, apperr.Forbidden, "the configured query must be a SELECT or WITH statement, not DELETE"},
		{"SELECT * FROM dbo.orders WITH (UPDLOCK)", `{}`, apperr.Forbidden, "UPDLOCK locks rows"},
		{"SELECT * FROM dbo.orders WHERE id = @p1", `{}`, apperr.Invalid, "takes 1 argument(s) in input.args, got 0"},
		{"SELECT * FROM dbo.orders WHERE id = @p1", `{"args":[[1]]}`, apperr.Invalid, "input.args[0] must be a string, number, boolean or null"},
	} {
		_, err := ex.Run(context.Background(), call(t, box, dsn, tc.query, tc.input))
		require.True(t, apperr.Is(err, tc.code), "%s: %v", tc.query, err)
		require.ErrorContains(t, err, tc.want)
	}
	require.Zero(t, hits.Load(), "a refused query never reaches the server")

	c := call(t, box, dsn, "SELECT 1", `{}`)
	c.Integration.Kind = "postgres"
	_, err = ex.Run(context.Background(), c)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
}

func TestConnectionsGoThroughTheGuard(t *testing.T) {
	t.Parallel()
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	addr, hits := listener(t)
	dsn := "sqlserver://reader:s3cret@" + addr + "?database=erp&dial+timeout=2"

	guarded := mssql.New(box, mssql.Options{}) // loopback not allowed
	t.Cleanup(guarded.Close)
	_, err = guarded.Run(context.Background(), call(t, box, dsn, "SELECT 1", `{}`))
	require.True(t, gateway.IsBlocked(err), "%v", err)
	require.Zero(t, hits.Load(), "the guard refused the dial")
	// Refused, it answers what any failed connection does (no port scan).
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	_, _, refused := apperr.Public(err)
	require.Equal(t, "the data source connection failed; the operator's log has the reason", refused)

	// Allowed, the server is reached, and what answers is not SQL Server.
	allowed := mssql.New(box, mssql.Options{Guard: datasource.Guard{Allow: loopback}})
	t.Cleanup(allowed.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = allowed.Run(ctx, call(t, box, dsn, "SELECT 1", `{}`))
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	require.NotZero(t, hits.Load())
	require.NotContains(t, err.Error(), "s3cret")
	_, _, reached := apperr.Public(err)
	require.Equal(t, refused, reached)

	// A DSN that does not parse is reported without quoting it.
	_, err = allowed.Run(ctx, call(t, box, "sqlserver://reader:s3cret@127.0.0.1?encrypt=maybe-not", "SELECT 1", `{}`))
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	require.NotContains(t, err.Error(), "s3cret")
}
