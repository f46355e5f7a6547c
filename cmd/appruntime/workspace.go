package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
)

// operatorActor is who command-line operator changes are recorded as.
const operatorActor = "operator"

const workspaceUsage = `usage: appruntime workspace create NAME

Creates a workspace and prints its id and its first admin token (shown once)
as JSON. Needs DATABASE_URL: whoever can reach the platform database is an
operator; a workspace admin's token cannot create workspaces.
`

// errUsage is a command line that names no known command; main exits 2.
var errUsage = errors.New("bad arguments")

// runWorkspace runs `appruntime workspace create NAME`.
func runWorkspace(ctx context.Context, args []string) error {
	if len(args) != 2 || args[0] != "create" || strings.TrimSpace(args[1]) == "" {
		fmt.Fprint(os.Stderr, workspaceUsage)
		return errUsage
	}
	cfg, err := loadConfig(config.RoleOperator)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckMigrated(ctx); err != nil {
		return err
	}
	w, err := admin.NewService(admin.Options{Store: st}).CreateWorkspace(ctx, operatorActor, admin.WorkspaceInput{Name: args[1]})
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(map[string]string{"workspace_id": w.ID, "name": w.Name, "admin_token": w.AdminToken}, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
