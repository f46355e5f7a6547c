// Package loadseed prepares what the load commands (cmd/appruntime-bench,
// cmd/appruntime-soak) run against: a fresh database, and a CSV file on a
// task as an agent would upload it. Not for the product's own use.
package loadseed

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
)

// FreshDatabase drops and creates database name on the server of adminURL
// and returns its URL.
func FreshDatabase(ctx context.Context, adminURL, name string) (string, error) {
	if err := DropDatabase(ctx, adminURL, name); err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	i := strings.LastIndex(adminURL, "/")
	rest := ""
	if q := strings.Index(adminURL[i:], "?"); q >= 0 {
		rest = adminURL[i+q:]
	}
	return adminURL[:i+1] + name + rest, nil
}

// DropDatabase drops database name on the server of adminURL, if it exists,
// cutting its connections.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// UploadCSV uploads name (id,name; rows rows) to the task, as an agent
// would, into the platform database's blob store.
func UploadCSV(ctx context.Context, st *store.Store, secretsKey []byte, taskID, name string, rows int) error {
	svc, err := files.New(files.Options{Store: st, Blobs: storage.NewDatabase(st.DB), SecretsKey: secretsKey, PublicAPIURL: "http://127.0.0.1"})
	if err != nil {
		return err
	}
	var csv strings.Builder
	csv.WriteString("id,name\n")
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&csv, "%d,item %d\n", i, i)
	}
	_, err = svc.Upload(ctx, taskID, name, "text/csv", strings.NewReader(csv.String()))
	return err
}
