package storage

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Lister is a Store that can name every key it holds, in no particular
// order. Migrate reads its source through it.
type Lister interface {
	Store
	// Keys yields every key, or one error that ends the listing.
	Keys(ctx context.Context) iter.Seq2[string, error]
}

// keysPage is how many keys the database lister reads per query.
const keysPage = 500

// Keys implements Lister: the blobs table a page at a time, by key.
func (d *Database) Keys(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		after := ""
		for {
			var page []string
			err := d.db.WithContext(ctx).Table("blobs").Where("key > ?", after).
				Order("key").Limit(keysPage).Pluck("key", &page).Error
			if err != nil {
				yield("", fmt.Errorf("storage: list blobs: %w", err))
				return
			}
			for _, k := range page {
				if !yield(k, nil) {
					return
				}
			}
			if len(page) < keysPage {
				return
			}
			after = page[len(page)-1]
		}
	}
}

// Keys implements Lister: every regular file under the directory but the
// temporary ones a Put or a crash left (their names start with a dot, which
// no key segment may).
func (d *Dir) Keys(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		err := fs.WalkDir(d.root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if strings.HasPrefix(path.Base(p), ".") && p != "." {
				if e.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !e.Type().IsRegular() {
				return nil
			}
			if !yield(p, nil) {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			yield("", fmt.Errorf("storage: list %s: %w", d.path, err))
		}
	}
}

// Keys implements Lister: the bucket's objects under the prefix, with the
// prefix taken off.
func (s *S3) Keys(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // stops the listing goroutine when the caller stops early
		for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
			if obj.Err != nil {
				yield("", fmt.Errorf("storage: s3: list: %s", describeS3(obj.Err)))
				return
			}
			if !yield(strings.TrimPrefix(obj.Key, s.prefix), nil) {
				return
			}
		}
	}
}

// MigrateReport counts what Migrate did.
type MigrateReport struct {
	// Copied blobs were written to the destination and read back intact.
	Copied int `json:"copied"`
	// Present blobs were already in the destination with the same sha256
	// (an earlier, interrupted run copied them) and were not written again.
	Present int `json:"present"`
	// Bytes is the size of the copied blobs.
	Bytes int64 `json:"bytes"`
}

// Migrate copies every blob of from into to, verifying each by sha256: a
// blob is read from the source, written, then read back from the
// destination and hashed again. A blob the destination already holds with
// the same hash is skipped, so a run that stopped (a crash, a refused
// credential, Ctrl-C) is resumed by running it again. The source is never
// changed. progress, when not nil, is told each key and what happened to it
// ("copied" or "present"). The first failure stops the run, naming the key;
// see docs/deploy.md#move-blobs-between-stores.
func Migrate(ctx context.Context, from Lister, to Store, progress func(key, what string)) (MigrateReport, error) {
	var rep MigrateReport
	for key, err := range from.Keys(ctx) {
		if err != nil {
			return rep, err
		}
		what, n, err := migrateOne(ctx, from, to, key)
		if err != nil {
			return rep, fmt.Errorf("blob %s: %w (%d copied, %d already present so far; run again to resume)", key, err, rep.Copied, rep.Present)
		}
		if what == "copied" {
			rep.Copied++
			rep.Bytes += n
		} else {
			rep.Present++
		}
		if progress != nil {
			progress(key, what)
		}
	}
	return rep, nil
}

// migrateOne copies key unless to holds it already, and says which.
func migrateOne(ctx context.Context, from, to Store, key string) (string, int64, error) {
	data, err := from.Get(ctx, key)
	if err != nil {
		return "", 0, fmt.Errorf("reading the source: %w", err)
	}
	want := sha256.Sum256(data)
	got, err := hashOf(ctx, to, key)
	switch {
	case err == nil && got == want:
		return "present", 0, nil
	case err != nil && !apperr.Is(err, apperr.NotFound):
		return "", 0, fmt.Errorf("reading the destination: %w", err)
	}
	if err := to.Put(ctx, key, "", data); err != nil {
		return "", 0, fmt.Errorf("writing the destination: %w", err)
	}
	got, err = hashOf(ctx, to, key)
	if err != nil {
		return "", 0, fmt.Errorf("reading back the copy: %w", err)
	}
	if got != want {
		return "", 0, errors.New("the copy read back differs from the source (sha256 mismatch)")
	}
	return "copied", int64(len(data)), nil
}

// hashOf is the sha256 of key's bytes in s, read as a stream.
func hashOf(ctx context.Context, s Store, key string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	r, err := s.Open(ctx, key)
	if err != nil {
		return sum, err
	}
	defer func() { _ = r.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// OpenSpec opens the store a command line names: "database" (the platform
// database db), "dir:/absolute/path", or an s3:// URL as BLOB_URL takes it
// (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). Unlike
// Open it never layers one store over another: a migration reads and writes
// exactly the store it names.
func OpenSpec(ctx context.Context, spec string, db *gorm.DB) (Lister, error) {
	switch {
	case spec == "database":
		return NewDatabase(db), nil
	case strings.HasPrefix(spec, "dir:"):
		p := strings.TrimPrefix(spec, "dir:")
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("%q: want dir:/absolute/path", spec)
		}
		return NewDir(p)
	case strings.HasPrefix(spec, "s3://"):
		cfg, err := ParseS3URL(spec)
		if err != nil {
			return nil, err
		}
		return NewS3(ctx, cfg)
	}
	return nil, fmt.Errorf("%q: want database, dir:/absolute/path or s3://bucket/prefix?endpoint=…&region=…", spec)
}

// SameSpec reports whether two specs name one store: a migration onto
// itself would "verify" every blob against itself.
func SameSpec(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }
