package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
)

// Open returns the blob store the deployment's configuration names:
//
//   - BLOB_DIR set: a Dir there, falling back to the database for reads, so
//     that blobs stored before the directory was configured (bundle
//     versions) stay readable. Several api and worker replicas must then
//     share the directory (a volume mounted on every one of them).
//   - BLOB_URL set (s3://bucket/prefix?endpoint=…&region=…): an S3 bucket,
//     falling back to the database for reads in the same way. A bad URL, a
//     missing bucket or refused credentials is a *config.Error naming
//     BLOB_URL; see docs/deploy.md#choose-a-blob-store.
//   - neither set: the database (Database), which every replica already
//     shares, so a deployment of several machines needs nothing more.
//
// Dev mode sets BLOB_DIR to a directory under its .appruntime directory
// when the variable is unset, keeping documents out of the SQLite file. An
// unusable directory is a *config.Error naming BLOB_DIR.
func Open(cfg *config.Config, db *gorm.DB) (Store, error) {
	database := NewDatabase(db)
	if cfg.BlobURL != "" {
		s3cfg, err := ParseS3URL(cfg.BlobURL)
		if err != nil {
			return nil, &config.Error{Var: "BLOB_URL", Reason: err.Error()}
		}
		bucket, err := NewS3(context.Background(), s3cfg)
		if err != nil {
			return nil, &config.Error{Var: "BLOB_URL", Reason: err.Error()}
		}
		return &Layered{Primary: bucket, Older: database}, nil
	}
	if cfg.BlobDir == "" {
		return database, nil
	}
	dir, err := NewDir(cfg.BlobDir)
	if err != nil {
		return nil, &config.Error{Var: "BLOB_DIR", Reason: err.Error()}
	}
	return &Layered{Primary: dir, Older: database}, nil
}

// Layered writes to Primary and reads from Primary, then from Older: the
// store of a deployment that moved its blobs (from the database to a
// directory) without copying what it had.
type Layered struct {
	Primary Store
	Older   Store
}

// Put implements Store: new bytes go to Primary only.
func (l *Layered) Put(ctx context.Context, key, contentType string, data []byte) error {
	return l.Primary.Put(ctx, key, contentType, data)
}

// Get implements Store.
func (l *Layered) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := l.Primary.Get(ctx, key)
	if !apperr.Is(err, apperr.NotFound) {
		return data, err
	}
	return l.Older.Get(ctx, key)
}

// Open implements Store.
func (l *Layered) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := l.Primary.Open(ctx, key)
	if !apperr.Is(err, apperr.NotFound) {
		return r, err
	}
	return l.Older.Open(ctx, key)
}

// Delete implements Store: the key is removed from both, so an old copy
// cannot reappear once the new one is gone.
func (l *Layered) Delete(ctx context.Context, key string) error {
	return errors.Join(l.Primary.Delete(ctx, key), l.Older.Delete(ctx, key))
}

// Presigner is a store that can hand out a time-limited URL reading a
// blob straight from where it lives (an S3 bucket).
type Presigner interface {
	// PresignExisting returns such a URL for key, valid for expiry, with
	// params as the store's response overrides; a key the store does not
	// hold is an apperr not_found error.
	PresignExisting(ctx context.Context, key string, expiry time.Duration, params url.Values) (*url.URL, error)
}

// PresignExisting implements Presigner when Primary does; a blob only
// Older holds (written before the bucket was configured) is not_found, so
// the caller serves it itself.
func (l *Layered) PresignExisting(ctx context.Context, key string, expiry time.Duration, params url.Values) (*url.URL, error) {
	p, ok := l.Primary.(Presigner)
	if !ok {
		return nil, apperr.NotFoundf("blob %s is not in a store that presigns", key)
	}
	return p.PresignExisting(ctx, key, expiry, params)
}

// Close closes Primary and Older when they hold resources (a Dir's open
// directory).
func (l *Layered) Close() error {
	var errs []error
	for _, s := range []Store{l.Primary, l.Older} {
		if c, ok := s.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("storage: close: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
