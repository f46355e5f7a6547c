package admin

import (
	"context"

	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/models"
)

// VerifyToken returns who a bearer token of scope speaks for (auth.Verify):
// the API's token check.
func (s *Service) VerifyToken(ctx context.Context, token, scope string) (auth.Principal, error) {
	if s.tokens != nil {
		return s.tokens.Verify(ctx, token, scope)
	}
	return auth.Verify(ctx, s.st.DB, token, scope)
}

// CheckPassword returns the user whose email and password match
// (auth.CheckPassword): the console's sign-in.
func (s *Service) CheckPassword(ctx context.Context, email, password string) (models.User, error) {
	return auth.CheckPassword(ctx, s.st.DB, email, password)
}

// AuditLog returns page page of workspace workspaceID's audit log, newest
// first (audit.List).
func (s *Service) AuditLog(ctx context.Context, workspaceID string, page int) (audit.Page, error) {
	return audit.List(ctx, s.st.DB, workspaceID, page)
}

// SearchAuditLog returns page page of the entries of workspace
// workspaceID's audit log that f keeps, newest first (audit.Search).
func (s *Service) SearchAuditLog(ctx context.Context, workspaceID string, f audit.Filter, page int) (audit.Page, error) {
	return audit.Search(ctx, s.st.DB, workspaceID, f, page)
}

// Audit records one entry of a workspace's audit log (audit.Record): what
// a front door did that no domain service records for it, such as trying
// a binding's op from the console.
func (s *Service) Audit(ctx context.Context, e audit.Entry) error {
	return audit.Record(ctx, s.st.DB, e)
}
