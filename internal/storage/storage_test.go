package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestStoreContract runs the same round trips on every backend.
func TestStoreContract(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) storage.Store{
		"postgres": func(t *testing.T) storage.Store { return storage.NewDatabase(testkit.Tx(t).DB) },
		"sqlite":   func(t *testing.T) storage.Store { return storage.NewDatabase(testkit.SQLite(t).DB) },
		"dir":      func(t *testing.T) storage.Store { return newDir(t, t.TempDir()) },
		"layered": func(t *testing.T) storage.Store {
			return &storage.Layered{Primary: newDir(t, t.TempDir()), Older: storage.NewDatabase(testkit.Tx(t).DB)}
		},
		"s3": func(t *testing.T) storage.Store { return newS3(t, testkit.NewS3Server(t)) },
		"layered-s3": func(t *testing.T) storage.Store {
			return &storage.Layered{Primary: newS3(t, testkit.NewS3Server(t)), Older: storage.NewDatabase(testkit.Tx(t).DB)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			blobs := open(t)

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
			for _, data := range [][]byte{big, append(big, 7)} { // whole chunks, and one byte more
				require.NoError(t, blobs.Put(ctx, "bundles/a/3", "application/octet-stream", data))
				r, err := blobs.Open(ctx, "bundles/a/3")
				require.NoError(t, err)
				got, err = io.ReadAll(r)
				require.NoError(t, err)
				require.NoError(t, r.Close())
				require.True(t, bytes.Equal(data, got), "Open streams the %d bytes back", len(data))
			}
			_, err = blobs.Open(ctx, "bundles/none/1")
			require.True(t, apperr.Is(err, apperr.NotFound), "absent key: %v", err)

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

func newDir(t *testing.T, path string) *storage.Dir {
	t.Helper()
	d, err := storage.NewDir(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestDirRefusesKeysThatLeaveIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parent := t.TempDir()
	secret := filepath.Join(parent, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("platform secret"), 0o600))
	root := filepath.Join(parent, "blobs")
	d := newDir(t, root)

	for _, key := range []string{
		"../secret",
		"files/../../secret",
		"/etc/passwd",
		"files//x",
		"files/./x",
		"files/..",
		".hidden",
		"files/.tmp-123",
		`files\..\..\secret`,
		"files/x\x00y",
		"files/x y",
		"files/%2e%2e/secret",
		"",
		strings.Repeat("a", storage.MaxKeyBytes+1),
	} {
		t.Run(key, func(t *testing.T) {
			require.ErrorContains(t, storage.CheckKey(key), "storage: ")
			err := d.Put(ctx, key, "", []byte("x"))
			require.True(t, apperr.Is(err, apperr.Invalid), "put %q: %v", key, err)
			_, err = d.Get(ctx, key)
			require.True(t, apperr.Is(err, apperr.Invalid), "get %q: %v", key, err)
			require.True(t, apperr.Is(d.Delete(ctx, key), apperr.Invalid), "delete %q", key)
		})
	}
	got, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "platform secret", string(got), "nothing outside the directory was touched")

	// A symbolic link planted inside the directory does not lead out of it.
	require.NoError(t, os.Symlink(parent, filepath.Join(root, "escape")))
	_, err = d.Get(ctx, "escape/secret")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "platform secret")
	require.Error(t, d.Put(ctx, "escape/written", "", []byte("x")))
	_, statErr := os.Stat(filepath.Join(parent, "written"))
	require.True(t, errors.Is(statErr, os.ErrNotExist), "nothing written through the link")
}

func TestDirWritesAtomically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	d := newDir(t, root)
	key := "files/0197c1a2-task/0197c1a3-file"
	for i := range 20 {
		require.NoError(t, d.Put(ctx, key, "", bytes.Repeat([]byte{byte(i)}, 64<<10)))
	}
	got, err := d.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, bytes.Repeat([]byte{19}, 64<<10), got, "the last write wins, whole")

	entries, err := os.ReadDir(filepath.Join(root, "files", "0197c1a2-task"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind: %v", entries)
	info, err := entries[0].Info()
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "blobs are private to the service's user")

	// A reader racing writers sees one whole version, never a mix.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			_ = d.Put(ctx, key, "", bytes.Repeat([]byte{byte(i)}, 64<<10))
		}
	}()
	for range 200 {
		got, err := d.Get(ctx, key)
		require.NoError(t, err)
		require.Len(t, got, 64<<10)
		require.Equal(t, bytes.Repeat(got[:1], 64<<10), got)
	}
	<-done
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.Tx(t).DB

	s, err := storage.Open(&config.Config{}, db)
	require.NoError(t, err)
	require.IsType(t, &storage.Database{}, s, "without BLOB_DIR blobs stay in the database")

	// Blobs stored before BLOB_DIR was set stay readable after it is.
	require.NoError(t, s.Put(ctx, "bundles/b/1", "text/html", []byte("old")))
	dir := filepath.Join(t.TempDir(), "blobs")
	s, err = storage.Open(&config.Config{BlobDir: dir}, db)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.(*storage.Layered).Close() })
	got, err := s.Get(ctx, "bundles/b/1")
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
	require.NoError(t, s.Put(ctx, "bundles/b/2", "text/html", []byte("new")))
	onDisk, err := os.ReadFile(filepath.Join(dir, "bundles", "b", "2"))
	require.NoError(t, err)
	require.Equal(t, "new", string(onDisk), "new blobs go to the directory")
	_, err = storage.NewDatabase(db).Get(ctx, "bundles/b/2")
	require.True(t, apperr.Is(err, apperr.NotFound), "and not to the database")
	require.NoError(t, s.Delete(ctx, "bundles/b/1"))
	_, err = s.Get(ctx, "bundles/b/1")
	require.True(t, apperr.Is(err, apperr.NotFound), "a delete removes the older copy too")

	// A directory that cannot be created is a configuration error naming BLOB_DIR.
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = storage.Open(&config.Config{BlobDir: filepath.Join(file, "blobs")}, db)
	var cfgErr *config.Error
	require.ErrorAs(t, err, &cfgErr)
	require.Equal(t, "BLOB_DIR", cfgErr.Var)
}
