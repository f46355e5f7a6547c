package datasource_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/datasource"
)

func TestAnswerLostOnlyWhereTheWriteMayHaveCommitted(t *testing.T) {
	t.Parallel()
	broken := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	cases := []struct {
		name string
		err  error
		lost bool
	}{
		{"no error", nil, false},
		{"the database refused the statement", &pgconn.PgError{Code: "23505", Message: "duplicate key"}, false},
		{"a refusal wrapped by the source", apperr.Wrap(&pgconn.PgError{Code: "22P02"}, apperr.Invalid, "bad value"), false},
		{"a value the driver could not encode", errors.New("failed to encode args[0]"), false},
		{"the connection broke in flight", broken, true},
		{"the connection broke, wrapped", apperr.Wrap(fmt.Errorf("datasource: %w", broken), apperr.BadGateway, "x"), true},
		{"the server hung up mid-reply", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"the connection closed under a statement already sent", fmt.Errorf("datasource: %w", pgconn.ErrConnClosed), true},
		{"the call was cancelled in flight", fmt.Errorf("datasource: %w", context.Canceled), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.lost, datasource.AnswerLost(c.err))
		})
	}
}
