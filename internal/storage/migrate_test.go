package storage_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/testkit"
)

// migrateBlobs are the blobs each migration test starts from: a small one,
// an empty one and one larger than a database read's chunk.
var migrateBlobs = map[string][]byte{
	"bundles/b1/v1":      []byte("<p>bundle</p>"),
	"files/t1/f-empty":   {},
	"assets/w1/a1/big.x": bytes.Repeat([]byte{0, 9, 0xfe}, storage.ChunkBytes/2+11),
}

// seed puts migrateBlobs into s in key order. Tests on Postgres run in
// transactions side by side, and a unique key another open transaction has
// written waits for it: writing the same keys in the same order in every
// test makes that a wait, never a deadlock (two tests taking two keys in
// opposite orders; TestMigrateIntoS3 failed so in CI).
func seed(t *testing.T, s storage.Store) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(migrateBlobs)) {
		require.NoError(t, s.Put(context.Background(), k, "", migrateBlobs[k]))
	}
}

// keysOf lists s through its Lister, sorted.
func keysOf(t *testing.T, s storage.Lister) []string {
	t.Helper()
	var keys []string
	for k, err := range s.Keys(context.Background()) {
		require.NoError(t, err)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestMigrateBetweenStores moves the same blobs database → directory → S3 →
// database, each hop verified, and re-runs one hop to show it resumes.
func TestMigrateBetweenStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := slices.Sorted(maps.Keys(migrateBlobs))
	for name, db := range map[string]func(t *testing.T) storage.Lister{
		"postgres": func(t *testing.T) storage.Lister { return storage.NewDatabase(testkit.Tx(t).DB) },
		"sqlite":   func(t *testing.T) storage.Lister { return storage.NewDatabase(testkit.SQLite(t).DB) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := db(t)
			seed(t, src)
			require.Equal(t, want, keysOf(t, src))

			dirPath := t.TempDir()
			dir := newDir(t, dirPath)
			var seen []string
			rep, err := storage.Migrate(ctx, src, dir, func(key, what string) { seen = append(seen, what+" "+key) })
			require.NoError(t, err)
			require.Equal(t, storage.MigrateReport{Copied: 3, Bytes: int64(len(migrateBlobs["bundles/b1/v1"]) + len(migrateBlobs["assets/w1/a1/big.x"]))}, rep)
			require.Len(t, seen, 3)
			for k, v := range migrateBlobs {
				got, err := dir.Get(ctx, k)
				require.NoError(t, err)
				require.True(t, bytes.Equal(v, got), k)
			}

			// A stray temporary file is not a key; a second run copies
			// nothing; a lost and a damaged copy are copied again.
			require.NoError(t, os.WriteFile(filepath.Join(dirPath, "bundles", ".tmp-abc"), []byte("half"), 0o600))
			require.Equal(t, want, keysOf(t, dir))
			rep, err = storage.Migrate(ctx, src, dir, nil)
			require.NoError(t, err)
			require.Equal(t, storage.MigrateReport{Present: 3}, rep)
			require.NoError(t, dir.Delete(ctx, "bundles/b1/v1"))
			require.NoError(t, dir.Put(ctx, "assets/w1/a1/big.x", "", []byte("damaged")))
			rep, err = storage.Migrate(ctx, src, dir, nil)
			require.NoError(t, err)
			require.Equal(t, 2, rep.Copied)
			require.Equal(t, 1, rep.Present)

			// The source is unchanged, and a migration back into an empty
			// database of the other kind round-trips.
			require.Equal(t, want, keysOf(t, src))
			back := storage.NewDatabase(testkit.SQLite(t).DB)
			rep, err = storage.Migrate(ctx, dir, back, nil)
			require.NoError(t, err)
			require.Equal(t, 3, rep.Copied)
			require.Equal(t, want, keysOf(t, back))
		})
	}
}

// TestMigrateIntoS3 copies a directory into a bucket under a prefix, lists
// the bucket back without the prefix, and copies it out again.
func TestMigrateIntoS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newDir(t, t.TempDir())
	seed(t, dir)
	bucket := newS3(t, testkit.NewS3Server(t))
	rep, err := storage.Migrate(ctx, dir, bucket, nil)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Copied)
	require.Equal(t, keysOf(t, dir), keysOf(t, bucket))
	rep, err = storage.Migrate(ctx, dir, bucket, nil)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Present, "a second run finds every blob intact")

	out := storage.NewDatabase(testkit.Tx(t).DB)
	rep, err = storage.Migrate(ctx, bucket, out, nil)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Copied)
	got, err := out.Get(ctx, "assets/w1/a1/big.x")
	require.NoError(t, err)
	require.True(t, bytes.Equal(migrateBlobs["assets/w1/a1/big.x"], got))
}

// lossy is a destination that drops the last byte of what it is given, as
// a store that truncates a write would.
type lossy struct{ storage.Store }

func (l lossy) Put(ctx context.Context, key, ct string, data []byte) error {
	if len(data) > 0 {
		data = data[:len(data)-1]
	}
	return l.Store.Put(ctx, key, ct, data)
}

// TestMigrateRefusesACopyThatDiffers: the read-back check catches a
// destination that stored other bytes, names the key and says how to
// resume.
func TestMigrateRefusesACopyThatDiffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newDir(t, t.TempDir())
	require.NoError(t, src.Put(ctx, "bundles/b1/v1", "", []byte("whole")))
	_, err := storage.Migrate(ctx, src, lossy{newDir(t, t.TempDir())}, nil)
	require.ErrorContains(t, err, "blob bundles/b1/v1: the copy read back differs from the source (sha256 mismatch)")
	require.ErrorContains(t, err, "run again to resume")
}

// TestOpenSpec: the stores a command line may name, and the words for one
// it may not.
func TestOpenSpec(t *testing.T) {
	t.Parallel()
	db := testkit.SQLite(t).DB
	s, err := storage.OpenSpec(context.Background(), "database", db)
	require.NoError(t, err)
	require.IsType(t, &storage.Database{}, s)
	s, err = storage.OpenSpec(context.Background(), "dir:"+t.TempDir(), db)
	require.NoError(t, err)
	require.IsType(t, &storage.Dir{}, s)
	for _, bad := range []string{"", "dir:relative", "/tmp/x", "ftp://x"} {
		_, err := storage.OpenSpec(context.Background(), bad, db)
		require.Error(t, err, bad)
	}
	require.True(t, storage.SameSpec("dir:/a/b/", "dir:/a/b"))
}
