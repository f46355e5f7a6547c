package apperr_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
)

// A database that cannot be reached, or a Postgres restarting under a
// statement, is a retryable 503; any other error without a code stays an
// internal 500, and a coded error keeps its code.
func TestADisconnectedDatabaseIsA503(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	require.Error(t, refused, "nothing listens on port 1")

	for name, c := range map[string]struct {
		err    error
		status int
	}{
		"a refused connection":           {fmt.Errorf("store: list tasks: %w", refused), http.StatusServiceUnavailable},
		"the server shutting down":       {&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, http.StatusServiceUnavailable},
		"the server starting up":         {&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, http.StatusServiceUnavailable},
		"a connection exception":         {&pgconn.PgError{Code: "08006"}, http.StatusServiceUnavailable},
		"a broken pooled connection":     {fmt.Errorf("query: %w", driver.ErrBadConn), http.StatusServiceUnavailable},
		"a unique violation":             {&pgconn.PgError{Code: "23505"}, http.StatusInternalServerError},
		"a plain failure":                {errors.New("boom"), http.StatusInternalServerError},
		"a coded error keeps its status": {apperr.Wrap(refused, apperr.BadGateway, "the data source cannot be reached"), http.StatusBadGateway},
	} {
		_, status, msg := apperr.Public(c.err)
		require.Equal(t, c.status, status, "%s: %s", name, msg)
		require.Equal(t, c.status == http.StatusServiceUnavailable && !apperr.Is(c.err, apperr.BadGateway), apperr.Disconnected(c.err) && status == 503, name)
	}
}
