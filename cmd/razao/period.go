package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
)

// cmdPeriod lists the competence months and closes one, with the same
// code as GET /v1/periods and POST /v1/periods/{month}/close: a close
// stores the month's snapshot in the closing transaction.
func cmdPeriod(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "close") {
		fmt.Fprintln(stderr, "usage: razao period list | close -month YYYY-MM  [-database-url URL] [-config F] [-time-zone TZ] [-go-live YYYY-MM-DD]")
		if len(args) > 0 && isHelp(args[0]) {
			return nil
		}
		return exitError(2)
	}
	var cf calendarFlags
	var monthName *string
	conn, _, err := openWithFlags(ctx, "period "+args[0], args[1:], stderr, func(fs *flag.FlagSet) {
		cf.register(fs)
		if args[0] == "close" {
			monthName = fs.String("month", "", "competence month to close, YYYY-MM (required)")
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
	now := time.Now()
	switch args[0] {
	case "list":
		ps, err := periods.List(ctx, conn, cal, now)
		if err != nil {
			return err
		}
		for _, p := range ps {
			closed := "-"
			if p.ClosedAt != nil {
				closed = p.ClosedAt.UTC().Format(time.RFC3339) + " " + p.ClosedBy
			}
			fmt.Fprintf(stdout, "%s\t%s\tsnapshot=%t\tactivity=%t\tclosable=%t\t%s\n", p.Month, p.Status, p.Snapshot, p.Activity, p.Closable, closed)
		}
	case "close":
		m, err := periods.ParseMonth(*monthName)
		if err != nil {
			return err
		}
		if err := periods.Close(ctx, conn, cal, m, now, cliCloser(), monthsums.Closing); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s closed\n", m)
	}
	return nil
}

// cliCloser names who closes a month from the command line: the operating
// system's user, as the API names the token.
func cliCloser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return "cli:" + name
	}
	return "cli"
}

// calendarFlags find the ledger's time zone and go-live date as serve
// does: flag, then environment, then the config file, then the default.
type calendarFlags struct {
	config, timeZone, goLive string
}

func (c *calendarFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", os.Getenv("RAZAO_CONFIG"), "YAML config file ($RAZAO_CONFIG): its time_zone and go_live")
	fs.StringVar(&c.timeZone, "time-zone", "", "IANA time zone of competence dates ($RAZAO_TIME_ZONE; default "+periods.DefaultTimeZone+")")
	fs.StringVar(&c.goLive, "go-live", "", "first date an event may carry, YYYY-MM-DD ($RAZAO_GO_LIVE; default "+periods.DefaultGoLive+")")
}

func (c *calendarFlags) calendar(getenv func(string) string) (periods.Calendar, error) {
	file, err := loadFileConfig(c.config)
	if err != nil {
		return periods.Calendar{}, err
	}
	cal, err := periods.NewCalendar(first(c.timeZone, getenv("RAZAO_TIME_ZONE"), file.TimeZone, periods.DefaultTimeZone))
	if err != nil {
		return periods.Calendar{}, fmt.Errorf("config: %w", err)
	}
	goLive, err := periods.ParseGoLive(first(c.goLive, getenv("RAZAO_GO_LIVE"), file.GoLive), time.Now())
	if err != nil {
		return periods.Calendar{}, fmt.Errorf("config: %w", err)
	}
	return cal.WithGoLive(goLive), nil
}
