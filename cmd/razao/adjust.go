package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// adjustUsage is razao adjust's synopsis.
const adjustUsage = `usage: razao adjust VERB [flags] [args]
  propose -key K -reason R [-competence YYYY-MM-DD] [-charge ID] [-partner ID] [-divergence ID] ACCOUNT=CENTAVOS ACCOUNT=CENTAVOS...
          (debits positive, credits negative: assets:cash=1500 equity:adjustments=-1500)
  reverse -reason R SET_ID        propose the reversal of a posting set (adjustment or payout)
  approve ID                      approve a proposal and book it (never one's own)
  reject [-note N] ID             reject a proposal
  list [-status S] [-kind K]      the proposals, oldest first
  show ID                         one proposal
flags of every verb: -database-url URL, -config F (its adjustments, time_zone, go_live and max_amount)`

// cmdAdjust proposes, approves, rejects and lists corrections with the
// same code as /v1/adjustments. Who acts is the operating system's user
// (cli:<user>), as a month's close names it: a proposal made here is
// approved by another person, here or through the API.
func cmdAdjust(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verbs := map[string]bool{"propose": true, "reverse": true, "approve": true, "reject": true, "list": true, "show": true}
	if len(args) == 0 || !verbs[args[0]] {
		fmt.Fprintln(stderr, adjustUsage)
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	verb := args[0]
	var (
		cf                                       calendarFlags
		key, reason, competence, charge, partner *string
		note, status, kind                       *string
		divergence                               *int64
	)
	conn, fs, err := openWithFlags(ctx, "adjust "+verb, args[1:], stderr, func(fs *flag.FlagSet) {
		cf.register(fs)
		switch verb {
		case "propose":
			key = fs.String("key", "", "idempotency key of the adjustment (required): the same key and request is the same proposal")
			reason = fs.String("reason", "", "why (required), 1 to 1000 characters")
			competence = fs.String("competence", "", "date to book on, YYYY-MM-DD, in an open month (default today)")
			charge = fs.String("charge", "", "the charge it corrects")
			partner = fs.String("partner", "", "the partner it concerns")
			divergence = fs.Int64("divergence", 0, "the divergence it settles")
		case "reverse":
			reason = fs.String("reason", "", "why (required), 1 to 1000 characters")
		case "reject":
			note = fs.String("note", "", "why, optional")
		case "list":
			status = fs.String("status", "", "only proposed, booked, rejected or expired")
			kind = fs.String("kind", "", "only adjustment or reversal")
		}
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	cal, err := cf.calendar(os.Getenv)
	if err != nil {
		return err
	}
	file, err := loadFileConfig(cf.config)
	if err != nil {
		return err
	}
	policy, err := file.Adjustments.build()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	limit := money.Limit(money.DefaultMaxAmount)
	if file.MaxAmount != 0 {
		limit = money.Limit(file.MaxAmount)
	}
	if err := limit.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c := adjustments.Corrections{DB: conn, Ledger: postings.New(conn, cal).WithLimit(limit), Config: policy}
	who := adjustments.Actor{Name: cliCloser()}
	now := time.Now()
	rest := fs.Args()
	var adj adjustments.Adjustment
	switch verb {
	case "propose":
		legs, err := parseLegs(rest)
		if err != nil {
			return err
		}
		adj, err = c.Propose(ctx, adjustments.Request{IdempotencyKey: *key, Legs: legs, Reason: *reason, Competence: *competence,
			ChargeID: *charge, Partner: *partner, DivergenceID: *divergence}, who, now)
		if err != nil {
			return err
		}
	case "reverse", "approve", "reject", "show":
		if len(rest) != 1 {
			return fmt.Errorf("adjust %s: one id, got %d arguments", verb, len(rest))
		}
		id, err := strconv.ParseInt(rest[0], 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("adjust %s: id %q is not a positive integer", verb, rest[0])
		}
		switch verb {
		case "reverse":
			adj, err = c.ProposeReversal(ctx, id, *reason, who, now)
		case "approve":
			adj, err = c.Approve(ctx, id, who, now)
		case "reject":
			adj, err = c.Reject(ctx, id, who, *note, now)
		default:
			adj, err = adjustments.Get(ctx, conn, id)
		}
		if err != nil {
			return err
		}
	case "list":
		return listAdjustments(ctx, c, adjustments.Filter{Status: adjustments.Status(*status), Kind: adjustments.Kind(*kind)}, stdout)
	}
	return json.NewEncoder(stdout).Encode(adj)
}

// listAdjustments writes every proposal of f, one JSON object a line.
func listAdjustments(ctx context.Context, c adjustments.Corrections, f adjustments.Filter, stdout io.Writer) error {
	enc := json.NewEncoder(stdout)
	for after := int64(0); ; {
		page, more, err := adjustments.List(ctx, c.DB, f, after, cursor.MaxLimit)
		if err != nil {
			return err
		}
		for _, a := range page {
			if err := enc.Encode(a); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// parseLegs reads ACCOUNT=CENTAVOS arguments.
func parseLegs(args []string) ([]adjustments.Leg, error) {
	if len(args) > adjustments.MaxLegs {
		return nil, fmt.Errorf("adjust propose: %d legs; an adjustment has %d to %d", len(args), adjustments.MinLegs, adjustments.MaxLegs)
	}
	legs := make([]adjustments.Leg, len(args))
	for i, a := range args {
		eq := strings.LastIndexByte(a, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("adjust propose: leg %.64q: want ACCOUNT=CENTAVOS (assets:cash=1500)", a)
		}
		n, err := strconv.ParseInt(a[eq+1:], 10, 64)
		if err != nil {
			return nil, errors.New("adjust propose: leg " + strconv.Quote(a[:eq]) + ": the amount is not an integer of centavos")
		}
		legs[i] = adjustments.Leg{Account: a[:eq], Amount: n}
	}
	return legs, nil
}
