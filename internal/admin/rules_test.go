package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// The rules of admin-entered tokens and users, where they live: names follow
// field's one rule (characters, not bytes; no control characters; blank
// allowed for these), users need an email and a role. The HTTP tests keep the
// status codes.
func TestTokenAndUserRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, tn, _ := newService(t)
	long := strings.Repeat("é", admin.MaxNameLength) // 400 bytes, 200 characters
	for _, tc := range []struct {
		name string
		run  func() error
		msg  string // "" = accepted
	}{
		{"token without a name", func() error {
			_, err := s.IssueToken(ctx, tn.Workspace.ID, "system", admin.TokenInput{Scope: models.ScopeAdmin})
			return err
		}, ""},
		{"token name of 200 two-byte characters", func() error {
			_, err := s.IssueToken(ctx, tn.Workspace.ID, "system", admin.TokenInput{Scope: models.ScopeAdmin, Name: long})
			return err
		}, ""},
		{"token name of 201 characters", func() error {
			_, err := s.IssueToken(ctx, tn.Workspace.ID, "system", admin.TokenInput{Scope: models.ScopeAdmin, Name: long + "x"})
			return err
		}, "name is longer than 200 characters"},
		{"token name with a newline", func() error {
			_, err := s.IssueToken(ctx, tn.Workspace.ID, "system", admin.TokenInput{Scope: models.ScopeAdmin, Name: "a\nb"})
			return err
		}, "name may not contain control characters"},
		{"user name of 201 characters", func() error {
			_, err := s.CreateUser(ctx, tn.Workspace.ID, "system", admin.UserInput{Email: "a@example.com", Role: models.RoleReviewer, Name: long + "x", Password: "correct horse battery"})
			return err
		}, "name is longer than 200 characters"},
		{"user without a name", func() error {
			_, err := s.CreateUser(ctx, tn.Workspace.ID, "system", admin.UserInput{Email: "b@example.com", Role: models.RoleReviewer, Password: "correct horse battery"})
			return err
		}, ""},
		{"user without a role", func() error {
			_, err := s.CreateUser(ctx, tn.Workspace.ID, "system", admin.UserInput{Email: "c@example.com", Password: "correct horse battery"})
			return err
		}, "role must be admin or reviewer"},
		{"user with a bad email", func() error {
			_, err := s.CreateUser(ctx, tn.Workspace.ID, "system", admin.UserInput{Email: "not an email", Role: models.RoleAdmin, Password: "correct horse battery"})
			return err
		}, "is not an email address"},
	} {
		err := tc.run()
		if tc.msg == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%s: %v", tc.name, err)
		require.ErrorContains(t, err, tc.msg, tc.name)
	}
}
