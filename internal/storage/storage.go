// Package storage keeps bytes (bundle versions, task files) behind a small
// interface, so that the platform can move them from the database to an
// object store without its callers changing.
package storage

import (
	"context"
	"errors"
	"fmt"
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

// Delete implements Store.
func (d *Database) Delete(ctx context.Context, key string) error {
	if err := d.db.WithContext(ctx).Where("key = ?", key).Delete(&models.Blob{}).Error; err != nil {
		return fmt.Errorf("storage: delete %s: %w", key, err)
	}
	return nil
}
