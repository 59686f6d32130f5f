package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/razao/razao/inbox"
)

// cmdInbox operates on stored deliveries: "retry -note TEXT ID" gives a
// delivery that gave up after its attempts (a processing_failed
// divergence) another round, once the cause is fixed, resolving its
// divergence with the note as finance would resolve it (the same rule,
// divergences.Requeue); a running service's worker applies it.
func cmdInbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: razao inbox retry [-database-url URL] -note TEXT DELIVERY_ID"
	if len(args) == 0 || args[0] != "retry" {
		fmt.Fprintln(stderr, usage)
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	var note string
	conn, fs, err := openWithFlags(ctx, "inbox retry", args[1:], stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&note, "note", "", "why the delivery is tried again (required: its divergence is resolved with it)")
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	if fs.NArg() != 1 {
		return fmt.Errorf("%s", usage)
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("delivery id %q: want the positive number of a stored delivery", fs.Arg(0))
	}
	if note == "" {
		// divergences.Requeue refuses it too; this says which flag is missing.
		return fmt.Errorf("invalid resolution note: -note is required, the delivery's divergence is resolved with it (%s)", usage)
	}
	proc := inbox.NewProcessor(conn, nil, slog.New(slog.NewTextHandler(stderr, nil)))
	d, err := proc.Requeue(ctx, id, note, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "delivery %d is due again (divergence %d resolved); the service's workers will apply it\n", id, d.ID)
	return nil
}
