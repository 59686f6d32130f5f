package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/razao/razao/webhook"
)

// cmdInbox operates on stored deliveries: "retry ID" gives a delivery
// that gave up after its attempts (a processing_failed divergence)
// another round, once the cause is fixed; a running service's worker
// applies it.
func cmdInbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "retry" {
		fmt.Fprintln(stderr, "usage: razao inbox retry [-database-url URL] DELIVERY_ID")
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	conn, fs, err := openWithFlags(ctx, "inbox retry", args[1:], stderr, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: razao inbox retry DELIVERY_ID")
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		return fmt.Errorf("delivery id %q: %w", fs.Arg(0), err)
	}
	proc := webhook.NewProcessor(conn, nil, slog.New(slog.NewTextHandler(stderr, nil)))
	requeued, err := proc.Requeue(ctx, id)
	if err != nil {
		return err
	}
	if !requeued {
		return fmt.Errorf("delivery %d is not a delivery that gave up (processing_failed)", id)
	}
	fmt.Fprintf(stdout, "delivery %d is due again; the service's workers will apply it\n", id)
	return nil
}
