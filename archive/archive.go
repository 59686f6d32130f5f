// Package archive keeps what is not the ledger for a configured age, then
// archives it to a checksummed file and only then purges it: the bodies
// and audit headers of applied inbox deliveries, outbox events, statement
// pages and kept statement files, reconciliation lines, and the webhook
// attempts log. The ledger itself (posting sets, postings, closed months,
// snapshots) is never archived nor purged.
//
// Which rows may go is one rule, in rule.go. How they go is run.go: a
// batch at a time, in one transaction, the rows are picked and locked,
// written to an archive file (file.go) that is made durable and read back
// whole, the file is recorded in the archives table, the rows are purged
// by the package that owns their table, and the transaction commits. A
// crash before the commit purges nothing; the file it may leave is
// recorded nowhere and holds rows the database still has (Run reports
// such files). Each batch is its own file, named
// KIND-YYYY-MM-ID.jsonl.gz: one or more files per month and kind, never
// appended to, so that a file, once recorded, never changes.
package archive

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Kind is what an archive file holds.
type Kind string

// The kinds, each with its own age (Config.Ages).
const (
	// InboxBodies: the bodies and audit headers of applied deliveries;
	// the rows, their keys and events stay.
	InboxBodies Kind = "inbox_bodies"
	// Outbox: the events, once every webhook endpoint has delivered them.
	Outbox Kind = "outbox"
	// Statements: a reconciliation run's statement pages and kept file.
	Statements Kind = "statements"
	// ReconciliationLines: a reconciliation run's lines.
	ReconciliationLines Kind = "reconciliation_lines"
	// WebhookAttempts: the log of the webhooks razao sent.
	WebhookAttempts Kind = "webhook_attempts"
)

// Kinds lists every kind, in the order a run takes them. It is the
// database's ck_archives_kind list.
var Kinds = []Kind{InboxBodies, Outbox, Statements, ReconciliationLines, WebhookAttempts}

// Bounds of the configuration.
const (
	// MinAge: an age under a day is a unit mistaken ("90" meant as days),
	// never a retention.
	MinAge = 24 * time.Hour
	// MaxAge: 100 years. Above it an age is a typo; 0 keeps forever.
	MaxAge = 100 * 365 * 24 * time.Hour
	// DefaultBatchRows and MaxBatchRows bound the rows of one archive
	// file, and so one transaction's locks and one file's size.
	DefaultBatchRows = 10000
	MaxBatchRows     = 1000000
)

// DefaultAges are the ages of the kinds a config does not name. Inbox
// bodies and outbox events: 90 days, longer than a PSP redelivers, a MED
// return is claimed or an app reconnects its event stream (the keys and
// events that deduplicate stay anyway). Statements and lines: 400 days,
// a year's audit and the month after it. Attempts: 30 days, what the
// attempts log was kept before retention.
var DefaultAges = map[Kind]time.Duration{
	InboxBodies:         90 * 24 * time.Hour,
	Outbox:              90 * 24 * time.Hour,
	Statements:          400 * 24 * time.Hour,
	ReconciliationLines: 400 * 24 * time.Hour,
	WebhookAttempts:     30 * 24 * time.Hour,
}

// Config is the retention: where archive files go, and each kind's age.
type Config struct {
	// Dir is the directory archive files are written to. It belongs to
	// one database.
	Dir string
	// Ages is each kind's age: rows older are archived and purged. 0
	// keeps a kind forever. A kind missing takes DefaultAges'.
	Ages map[Kind]time.Duration
	// BatchRows bounds one file's rows (0: DefaultBatchRows).
	BatchRows int
	// Location is the time zone of the months files are named by and
	// the ledger's months are closed in.
	Location *time.Location
}

// Age is the age of kind k (DefaultAges' when not configured).
func (c Config) Age(k Kind) time.Duration {
	if a, ok := c.Ages[k]; ok {
		return a
	}
	return DefaultAges[k]
}

// Validate refuses what would archive wrongly or never: a negative, tiny
// or huge age, an unknown kind, a batch out of bounds, a directory that
// is missing or not writable.
func (c Config) Validate() error {
	for k, a := range c.Ages {
		if !knownKind(k) {
			return fmt.Errorf("retention: unknown kind %q", k)
		}
		if err := checkAge(k, a); err != nil {
			return err
		}
	}
	if c.BatchRows < 0 || c.BatchRows > MaxBatchRows {
		return fmt.Errorf("retention: batch_rows must be 1 to %d, or 0 for %d; got %d", MaxBatchRows, DefaultBatchRows, c.BatchRows)
	}
	if c.Location == nil {
		return errors.New("retention: no time zone")
	}
	return CheckDir(c.Dir)
}

func checkAge(k Kind, a time.Duration) error {
	switch {
	case a < 0:
		return fmt.Errorf("retention: %s: the age must not be negative (0 keeps it forever); got %s", k, a)
	case a > 0 && a < MinAge:
		return fmt.Errorf("retention: %s: an age under %s is surely a mistake (0 keeps it forever); got %s", k, MinAge, a)
	case a > MaxAge:
		return fmt.Errorf("retention: %s: an age over 100 years (%s) is surely a mistake (0 keeps it forever); got %s", k, MaxAge, a)
	}
	return nil
}

func knownKind(k Kind) bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// CheckDir refuses an archive directory that is not given, missing, not
// a directory or not writable by this process.
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("retention: archive_dir is required")
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("retention: archive_dir %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("retention: archive_dir %s: not a directory", dir)
	}
	// A file made and removed, rather than access(2): root passes
	// access(2) on a read-only file system.
	probe, err := os.CreateTemp(dir, ".razao-probe-*")
	if err != nil {
		return fmt.Errorf("retention: archive_dir %s: not writable by this user: %w", dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func (c Config) batchRows() int {
	if c.BatchRows == 0 {
		return DefaultBatchRows
	}
	return c.BatchRows
}
