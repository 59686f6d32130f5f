// Command razao is the double-entry ledger service for PIX payments: one
// binary that serves the webhook front and the finance API, migrates the
// database, and verifies the ledger's invariants.
//
//	razao serve     run the HTTP service (migrates first unless -migrate=false)
//	razao migrate   apply the embedded SQL migrations
//	razao verify    re-check every ledger invariant; exit 3 on any breach
//	razao export    write one month's CSV export (journal, trial balance, income statement)
//	razao token     create, list or revoke API bearer tokens
//	razao inbox     retry a delivery that gave up after its attempts
//	razao reconcile reconcile a PSP's statement against the ledger, booking what it lacks
//	razao period    list the competence months, or close one
//	razao adjust    propose, approve, reject or list corrections (four eyes)
//	razao webhooks  create, list, rotate, disable, enable, delete or replay the webhook endpoints razao sends to
//	razao archive   archive and purge what retention lets go; verify or list the archive files
//	razao demo      drive a running service like a PSP and print each answer
//	razao psp send  sign one payment, refund or failure as an endpoint's PSP and send it
//	razao config check  validate a config file and its environment, starting nothing
//	razao health    ask a running service whether it is ready, exit 1 if not
//	razao version   the module version, commit and Go version of the build
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// exitBreach is verify's exit status when the ledger is breached, apart
// from 2 for usage errors and 1 for failures to run.
const exitBreach = 3

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the HTTP service", cmdServe},
		{"migrate", "apply the embedded SQL migrations", cmdMigrate},
		{"verify", "re-check every ledger invariant over the whole ledger (-incremental: only what changed since the last clean run)", cmdVerify},
		{"export", "write one month's CSV export to a file", cmdExport},
		{"token", "create, list or revoke API bearer tokens", cmdToken},
		{"inbox", "retry a delivery that gave up after its attempts", cmdInbox},
		{"period", "list the competence months, or close one (with its snapshot)", cmdPeriod},
		{"adjust", "propose, approve, reject or list corrections: adjustments and reversals (four eyes)", cmdAdjust},
		{"webhooks", "the webhooks razao sends: create, list, show, rotate, disable, enable, delete, replay, attempts", cmdWebhooks},
		{"archive", "run, verify or list the archives of what retention purges (inbox bodies, events, statements, lines, attempts)", cmdArchive},
		{"reconcile", "reconcile an endpoint's statement (a CSV file or a Pix API window) against the ledger", cmdReconcile},
		{"demo", "drive a running service like a PSP would and print what happens", cmdDemo},
		{"psp", "send: sign a payment, refund or failure as an endpoint's PSP would, and send it", cmdPSP},
		{"config", "check: validate a config file and the environment it names, starting nothing", cmdConfig},
		{"health", "ask a running service whether it is ready (the container's health check)", cmdHealth},
		{"version", "print the version, commit and Go version this binary was built from", cmdVersion},
	}
}

// run executes one command line and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "help" && len(args) > 1 {
		args = []string{args[1], "-h"} // razao help period: period's own flags
	} else if isHelp(args[0]) {
		usage(stdout) // asked for: razao help | less
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		var exit exitError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &exit):
			return int(exit)
		default:
			fmt.Fprintf(stderr, "razao %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "razao: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// isHelp reports whether arg asks for usage rather than for work: a
// command asked for help answers it before it touches the database.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// exitError ends a command with a given status after it has reported.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: razao <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nrun 'razao <command> -h' for its flags; DATABASE_URL names the database.")
}
