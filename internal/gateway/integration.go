package gateway

import (
	"context"

	"github.com/appruntime/appruntime/models"
)

// Integrations loads the integration an http_call names. It returns the row
// whatever its workspace (the gateway checks that) and a not_found error
// when there is none. The process's one integration cache
// (integration.Lookup) implements it.
type Integrations interface {
	Integration(ctx context.Context, id string) (models.Integration, error)
}
