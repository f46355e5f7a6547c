package storage_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestDatabaseStore(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{
		"postgres": testkit.Tx,
		"sqlite":   testkit.SQLite,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			blobs := storage.NewDatabase(open(t).DB)

			_, err := blobs.Get(ctx, "bundles/none/1")
			require.True(t, apperr.Is(err, apperr.NotFound), "absent key: %v", err)

			big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<20) // 4 MiB, binary
			require.NoError(t, blobs.Put(ctx, "bundles/a/1", "text/html", []byte("<p>one</p>")))
			require.NoError(t, blobs.Put(ctx, "bundles/a/2", "application/octet-stream", big))
			got, err := blobs.Get(ctx, "bundles/a/1")
			require.NoError(t, err)
			require.Equal(t, "<p>one</p>", string(got))
			got, err = blobs.Get(ctx, "bundles/a/2")
			require.NoError(t, err)
			require.True(t, bytes.Equal(big, got), "4 MiB of binary round-trips")

			require.NoError(t, blobs.Put(ctx, "bundles/a/1", "text/html", []byte("<p>replaced</p>")))
			got, err = blobs.Get(ctx, "bundles/a/1")
			require.NoError(t, err)
			require.Equal(t, "<p>replaced</p>", string(got))

			require.NoError(t, blobs.Put(ctx, "empty", "text/plain", nil))
			got, err = blobs.Get(ctx, "empty")
			require.NoError(t, err)
			require.Empty(t, got)

			require.NoError(t, blobs.Delete(ctx, "bundles/a/1"))
			require.NoError(t, blobs.Delete(ctx, "bundles/a/1"), "deleting twice is fine")
			_, err = blobs.Get(ctx, "bundles/a/1")
			require.True(t, apperr.Is(err, apperr.NotFound))
			_, err = blobs.Get(ctx, "bundles/a/2")
			require.NoError(t, err, "other keys untouched")
		})
	}
}
