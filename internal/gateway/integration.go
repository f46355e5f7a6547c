package gateway

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// Integrations loads the integration an http_call names. It returns the row
// whatever its workspace (the gateway checks that) and a not_found error
// when there is none.
type Integrations interface {
	Integration(ctx context.Context, id string) (models.Integration, error)
}

// IntegrationTTL bounds how long DBIntegrations keeps an integration, and so
// how long a rotated secret may take to apply.
const IntegrationTTL = 5 * time.Second

// DBIntegrations loads integrations from the platform database, each kept
// for IntegrationTTL. It is safe for concurrent use.
type DBIntegrations struct {
	db    *gorm.DB
	cache sync.Map // id → cachedIntegration
}

type cachedIntegration struct {
	row    models.Integration
	loaded time.Time
}

// NewDBIntegrations returns integrations loaded from db.
func NewDBIntegrations(db *gorm.DB) *DBIntegrations { return &DBIntegrations{db: db} }

// Integration returns the integration with id.
func (d *DBIntegrations) Integration(ctx context.Context, id string) (models.Integration, error) {
	if v, ok := d.cache.Load(id); ok {
		if c := v.(cachedIntegration); time.Since(c.loaded) < IntegrationTTL {
			return c.row, nil
		}
	}
	var row models.Integration
	if !models.IsID(id) {
		return row, apperr.NotFoundf("integration not found")
	}
	err := d.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if err := store.NotFound(err, "gateway: load integration", "integration"); err != nil {
		return row, err
	}
	d.cache.Store(id, cachedIntegration{row: row, loaded: time.Now()})
	return row, nil
}
