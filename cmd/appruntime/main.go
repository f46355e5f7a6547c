// Command appruntime is the one binary of appruntime: the API, the console,
// the worker, the migrator and the embedded dev mode that runs them all.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: appruntime <command>

commands:
  dev       everything in one process on embedded defaults, seeded with a demo
  api       the JSON API (runtime verbs, host, agent and admin endpoints)
  console   the server-rendered admin console
  worker    the background job fleet (queues, outbox relay); --queues lookup,script serves some queues only
  migrate   apply database migrations (and report bindings that break a rule)
  workspace create NAME
            create a workspace and print its first admin token (operators only)
  probe URL GET URL and exit 0 on a 2xx answer (container healthchecks)
  blobs migrate --from STORE --to STORE
            copy every blob into another store, verified by sha256 (resumable)
  bundle types --binding ID
            write the TypeScript types of a binding's ops for the bundle SDK
  bundle dev DIR
            serve a bundle from DIR against appruntime dev, reloaded on save

Configuration comes from environment variables; see docs/operators.md.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	cmd := os.Args[1]
	var err error
	switch cmd {
	case "dev":
		err = runDev(ctx, os.Args[2:])
	case "api":
		err = runAPI(ctx)
	case "console":
		err = runConsole(ctx)
	case "worker":
		err = runWorker(ctx, os.Args[2:])
	case "migrate":
		err = runMigrate(ctx)
	case "workspace":
		err = runWorkspace(ctx, os.Args[2:])
	case "probe":
		err = runProbe(ctx, os.Args[2:])
	case "blobs":
		err = runBlobs(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "bundle":
		err = runBundle(ctx, os.Args[2:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "appruntime: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "appruntime %s: %v\n", cmd, err)
		os.Exit(1)
	}
}
