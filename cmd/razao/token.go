package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/razao/razao/auth"
)

// cmdToken manages the API's bearer tokens: create prints the token once
// (only its hash is stored), list shows them, revoke ends one at once.
func cmdToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: razao token create -name NAME -scope read|write|admin[,...] | list | revoke ID | check < TOKEN_FILE  [-database-url URL]"
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitError(2)
	}
	if isHelp(args[0]) {
		fmt.Fprintln(stderr, usage)
		return nil
	}
	var name, scope *string
	conn, fs, err := openWithFlags(ctx, "token "+args[0], args[1:], stderr, func(fs *flag.FlagSet) {
		name = fs.String("name", "", "who or what the token is for (create)")
		scope = fs.String("scope", "read", "comma-separated scopes: read, write, admin (create)")
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	switch args[0] {
	case "create":
		scopes, err := auth.ParseScopes(*scope)
		if err != nil {
			return err
		}
		if *name == "" {
			return fmt.Errorf("-name is required")
		}
		plain, t, err := auth.Create(ctx, conn, *name, scopes)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "token %d %q with scopes %v; it is shown only now:\n", t.ID, t.Name, t.Scopes)
		fmt.Fprintln(stdout, plain)
	case "list":
		ts, err := auth.List(ctx, conn)
		if err != nil {
			return err
		}
		for _, t := range ts {
			state := "live"
			if t.RevokedAt != nil {
				state = "revoked " + t.RevokedAt.Format("2006-01-02 15:04")
			}
			fmt.Fprintf(stdout, "%d\t%s\t%s\t%s\n", t.ID, t.Name, strings.Join(scopeNames(t.Scopes), ","), state)
		}
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: razao token revoke ID")
		}
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil {
			return fmt.Errorf("token id %q: %w", fs.Arg(0), err)
		}
		t, err := auth.Revoke(ctx, conn, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked token %d %q\n", t.ID, t.Name)
	case "check":
		// The token on stdin, never in argv: `make run` asks whether the
		// token it kept from a previous run still works.
		plain, err := io.ReadAll(io.LimitReader(os.Stdin, 4096))
		if err != nil {
			return fmt.Errorf("read the token from stdin: %w", err)
		}
		t, err := auth.Authenticate(ctx, conn, strings.TrimSpace(string(plain)))
		if err != nil {
			return fmt.Errorf("the token on stdin is not a live token: %w", err)
		}
		fmt.Fprintf(stdout, "token %d %q is live, scopes %s\n", t.ID, t.Name, strings.Join(scopeNames(t.Scopes), ","))
	default:
		return fmt.Errorf("unknown token command %q (create, list, revoke, check)", args[0])
	}
	return nil
}

func scopeNames(ss []auth.Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
