package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
)

const blobsUsage = `usage: appruntime blobs migrate --from STORE --to STORE [--quiet]

Copies every blob of one store into another and verifies each copy by
sha256, so an operator can switch BLOB_DIR or BLOB_URL. A STORE is:
  database                      the platform database's blobs table
  dir:/absolute/path            a BLOB_DIR directory
  s3://bucket/prefix?endpoint=…&region=…
                                a BLOB_URL bucket (credentials from
                                AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)
The source is never changed. Blobs the destination already holds intact
are skipped, so a run that stopped is resumed by running it again. Needs
DATABASE_URL (migrated). See docs/deploy.md#move-blobs-between-stores.
`

// runBlobs runs `appruntime blobs migrate`.
func runBlobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "migrate" {
		fmt.Fprint(stderr, blobsUsage)
		return errUsage
	}
	fl := flag.NewFlagSet("blobs migrate", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, blobsUsage) }
	from := fl.String("from", "", "the store to copy from")
	to := fl.String("to", "", "the store to copy into")
	quiet := fl.Bool("quiet", false, "print only the summary")
	if err := fl.Parse(args[1:]); err != nil || fl.NArg() != 0 || *from == "" || *to == "" {
		if err == nil {
			fl.Usage()
		}
		return errUsage
	}
	if storage.SameSpec(*from, *to) {
		return fmt.Errorf("--from and --to name the same store (%s)", *from)
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
	src, err := storage.OpenSpec(ctx, *from, st.DB)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer closeStore(src)
	dst, err := storage.OpenSpec(ctx, *to, st.DB)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer closeStore(dst)
	progress := func(key, what string) { fmt.Fprintf(stderr, "%s %s\n", what, key) }
	if *quiet {
		progress = nil
	}
	rep, err := storage.Migrate(ctx, src, dst, progress)
	if err != nil {
		return err
	}
	out, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(out))
	return err
}

// closeStore closes a store that holds resources (a directory).
func closeStore(s storage.Store) {
	if c, ok := s.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
