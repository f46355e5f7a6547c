package admin

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// MaxEmailLength bounds an email address (RFC 5321's path limit).
const MaxEmailLength = 254

// UserInput is a user as the admin API takes it. Password is required on
// create and optional on update (absent keeps the current one).
type UserInput struct {
	Email    string `json:"email"`
	Name     string `json:"name,omitempty"`
	Role     string `json:"role"`
	Password string `json:"password,omitempty"`
}

// UserView is a user as the admin API shows it (never the password hash).
type UserView struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func userView(u models.User) UserView {
	return UserView{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// checkUser validates in onto u, hashing a new password.
func checkUser(u *models.User, in UserInput, passwordRequired bool) error {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return apperr.Invalidf("email is required")
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > MaxEmailLength {
		return apperr.Invalidf("email %q is not an email address", in.Email)
	}
	u.Email = email
	if u.Name, err = field.OptionalName(in.Name, "name", MaxNameLength); err != nil {
		return err
	}
	if in.Role != models.RoleAdmin && in.Role != models.RoleReviewer {
		return apperr.Invalidf("role must be admin or reviewer")
	}
	u.Role = in.Role
	if in.Password == "" {
		if passwordRequired {
			return apperr.Invalidf("password is required")
		}
		return nil
	}
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return err
	}
	u.PasswordHash = hash
	return nil
}

// saveUserError turns the email uniqueness violation into a 409. Emails
// are unique per workspace (migration 0003), so the conflict is always with
// a user of the caller's own workspace: the reply never tells whether
// another workspace has the email.
func saveUserError(err error, email string) error {
	if store.IsUniqueViolation(err) {
		return apperr.Conflictf("a user with email %s already exists in this workspace", email)
	}
	return fmt.Errorf("admin: save user: %w", err)
}

// ListUsers returns the workspace's users by email.
func (s *Service) ListUsers(ctx context.Context, workspaceID string) ([]UserView, error) {
	var rows []models.User
	if err := s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("email").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("admin: list users: %w", err)
	}
	out := make([]UserView, 0, len(rows))
	for _, u := range rows {
		out = append(out, userView(u))
	}
	return out, nil
}

// GetUser returns a user of the workspace.
func (s *Service) GetUser(ctx context.Context, workspaceID, id string) (UserView, error) {
	var u models.User
	if err := take(ctx, s.st.DB, &u, workspaceID, id, "user"); err != nil {
		return UserView{}, err
	}
	return userView(u), nil
}

// CreateUser creates a user of the workspace with a bcrypt-hashed password.
func (s *Service) CreateUser(ctx context.Context, workspaceID, actor string, in UserInput) (UserView, error) {
	u := models.User{ID: models.NewID(), WorkspaceID: workspaceID}
	if err := checkUser(&u, in, true); err != nil {
		return UserView{}, err
	}
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "user.create", TargetType: "user", TargetID: u.ID,
		Detail: map[string]any{"email": u.Email, "role": u.Role}}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := tx.Create(&u).Error; err != nil {
			return saveUserError(err, u.Email)
		}
		return nil
	})
	if err != nil {
		return UserView{}, err
	}
	return userView(u), nil
}

// UpdateUser applies a merge patch to a user of the workspace; a password in
// the patch replaces the current one. The workspace's last admin keeps the
// role (keepAnAdmin).
func (s *Service) UpdateUser(ctx context.Context, workspaceID, actor, id string, patch []byte) (UserView, error) {
	var u models.User
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "user.update", TargetType: "user", TargetID: id}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := take(ctx, tx, &u, workspaceID, id, "user"); err != nil {
			return err
		}
		var in UserInput
		if err := strictjson.MergeInto(UserInput{Email: u.Email, Name: u.Name, Role: u.Role}, patch, &in); err != nil {
			return err
		}
		if u.Role == models.RoleAdmin && in.Role != models.RoleAdmin {
			if err := keepAnAdmin(ctx, tx, u, "made "+in.Role); err != nil {
				return err
			}
		}
		if err := checkUser(&u, in, false); err != nil {
			return err
		}
		e.Detail = map[string]any{"email": u.Email, "name": u.Name, "role": u.Role, "password_changed": in.Password != ""}
		u.UpdatedAt = time.Now().UTC()
		if err := tx.Select("email", "name", "role", "password_hash", "updated_at").Updates(&u).Error; err != nil {
			return saveUserError(err, u.Email)
		}
		return nil
	})
	if err != nil {
		return UserView{}, err
	}
	return userView(u), nil
}

// keepAnAdmin refuses (409) to take the admin role from u, the change
// described by what, when u is the workspace's last admin: a workspace
// without one could no longer be run from the console. The workspace's row
// is locked first, so that two admins demoting each other at once cannot
// both pass (SELECT … FOR UPDATE on Postgres; SQLite has one writer).
func keepAnAdmin(ctx context.Context, tx *gorm.DB, u models.User, what string) error {
	var w models.Workspace
	err := tx.WithContext(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Where("id = ?", u.WorkspaceID).Take(&w).Error
	if err != nil {
		return fmt.Errorf("admin: lock workspace: %w", err)
	}
	var others int64
	err = tx.WithContext(ctx).Model(&models.User{}).
		Where("workspace_id = ? AND role = ? AND id <> ?", u.WorkspaceID, models.RoleAdmin, u.ID).Count(&others).Error
	if err != nil {
		return fmt.Errorf("admin: count admins: %w", err)
	}
	if others == 0 {
		return apperr.Conflictf("%s is the workspace's last admin and cannot be %s: make another user admin first", u.Email, what)
	}
	return nil
}

// DeleteUser deletes a user of the workspace and their host tokens (never
// the workspace's last admin: keepAnAdmin); tasks
// they had claimed or were assigned go back to the queue, and the app
// sessions minted for them stop working at once.
func (s *Service) DeleteUser(ctx context.Context, workspaceID, actor, id string) error {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "user.delete", TargetType: "user", TargetID: id}
	return s.change(ctx, &e, func(tx *gorm.DB) error {
		var u models.User
		if err := take(ctx, tx, &u, workspaceID, id, "user"); err != nil {
			return err
		}
		e.Detail = map[string]any{"email": u.Email}
		if u.Role == models.RoleAdmin {
			if err := keepAnAdmin(ctx, tx, u, "deleted"); err != nil {
				return err
			}
		}
		if err := s.sessions.RevokeUserSessions(ctx, tx, u.ID); err != nil {
			return err
		}
		if err := s.revokeCachedTokensOf(ctx, tx, "user_id", u.ID); err != nil {
			return err
		}
		return inUse(tx.Delete(&models.User{}, "id = ?", u.ID).Error, "user", "other rows")
	})
}
