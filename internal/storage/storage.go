// Package storage keeps bytes (bundle versions, task files) behind a small
// interface, so that the platform can move them from the database to an
// object store without its callers changing.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// Store is a blob store. Keys are opaque paths chosen by the caller (a
// bundle version's is "bundles/<bundle id>/<random id>", one per upload); the
// caller keeps the key, the size and the content type on its own row, so Get
// returns only the bytes.
type Store interface {
	// Put stores data under key, replacing what was there. contentType is a
	// hint for backends that serve objects themselves (an object store).
	Put(ctx context.Context, key, contentType string, data []byte) error
	// Get returns the bytes under key, or an apperr not_found error.
	Get(ctx context.Context, key string) ([]byte, error)
	// Open returns a reader of the bytes under key that never holds them
	// whole (at most ChunkBytes at a time), or an apperr not_found error.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes key; deleting an absent key is not an error.
	Delete(ctx context.Context, key string) error
}

// Database stores blobs in the platform database's blobs table. It is the
// default because every API and worker replica sees the same bytes with no
// shared disk and no extra service to run.
type Database struct {
	db *gorm.DB
}

// NewDatabase returns a blob store on db.
func NewDatabase(db *gorm.DB) *Database { return &Database{db: db} }

// Put implements Store. The database backend keeps no content type: the
// owning row (a bundle, a file) records it.
func (d *Database) Put(ctx context.Context, key, _ string, data []byte) error {
	if key == "" {
		return errors.New("storage: put: empty key")
	}
	if data == nil {
		data = []byte{}
	}
	row := models.Blob{Key: key, Content: data, CreatedAt: time.Now().UTC()}
	err := d.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"content", "created_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	return nil
}

// Get implements Store.
func (d *Database) Get(ctx context.Context, key string) ([]byte, error) {
	var row models.Blob
	err := d.db.WithContext(ctx).Where("key = ?", key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFoundf("blob %s not found", key)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %s: %w", key, err)
	}
	return row.Content, nil
}

// ChunkBytes is the most a Database reader holds of a blob at a time.
const ChunkBytes = 1 << 20

// Open implements Store: the blob is read ChunkBytes at a time, each chunk
// one query (substr works on bytea in Postgres and on a blob in SQLite).
func (d *Database) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r := &chunkReader{ctx: ctx, db: d.db, key: key}
	if err := r.fill(); err != nil {
		return nil, err
	}
	return r, nil
}

// chunkReader reads a database blob a chunk at a time.
type chunkReader struct {
	ctx   context.Context
	db    *gorm.DB
	key   string
	next  int64 // offset of the next chunk, from 0
	chunk []byte
	done  bool
}

// fill reads the next chunk; a chunk shorter than ChunkBytes is the last.
func (r *chunkReader) fill() error {
	var chunk []byte
	err := r.db.WithContext(r.ctx).Raw("SELECT substr(content, ?, ?) FROM blobs WHERE key = ?", r.next+1, ChunkBytes, r.key).Row().Scan(&chunk)
	if errors.Is(err, sql.ErrNoRows) {
		if r.next == 0 {
			return apperr.NotFoundf("blob %s not found", r.key)
		}
		return fmt.Errorf("storage: read %s: the blob went away while it was read", r.key)
	}
	if err != nil {
		return fmt.Errorf("storage: read %s: %w", r.key, err)
	}
	r.chunk = chunk
	r.next += int64(len(r.chunk))
	r.done = len(r.chunk) < ChunkBytes
	return nil
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunk) == 0 {
		if r.done {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.chunk)
	r.chunk = r.chunk[n:]
	return n, nil
}

func (r *chunkReader) Close() error { return nil }

// Delete implements Store.
func (d *Database) Delete(ctx context.Context, key string) error {
	if err := d.db.WithContext(ctx).Where("key = ?", key).Delete(&models.Blob{}).Error; err != nil {
		return fmt.Errorf("storage: delete %s: %w", key, err)
	}
	return nil
}
