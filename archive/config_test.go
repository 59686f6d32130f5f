package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Hostile values are refused with an error naming the key: a negative,
// tiny or huge age, an unknown kind, a batch out of bounds, an archive
// directory missing, a file, unwritable, or not given.
func TestConfigRefusesHostileValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	writeFile(t, file, []byte("x"))
	ok := Config{Dir: dir, Location: saoPaulo}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	ages := func(k Kind, a time.Duration) Config { c := ok; c.Ages = map[Kind]time.Duration{k: a}; return c }
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"negative age":   {ages(InboxBodies, -time.Hour), "must not be negative"},
		"an age of 90ns": {ages(Outbox, 90), "surely a mistake"},
		"an age of 200y": {ages(Statements, 200*365*24*time.Hour), "over 100 years"},
		"largest age":    {ages(WebhookAttempts, time.Duration(1<<63-1)), "over 100 years"},
		"unknown kind":   {ages("postings", 24*time.Hour), `unknown kind "postings"`},
		"negative batch": {Config{Dir: dir, Location: saoPaulo, BatchRows: -1}, "batch_rows"},
		"huge batch":     {Config{Dir: dir, Location: saoPaulo, BatchRows: 1 << 40}, "batch_rows"},
		"no directory":   {Config{Location: saoPaulo}, "archive_dir is required"},
		"missing":        {Config{Dir: filepath.Join(dir, "nope"), Location: saoPaulo}, "no such file"},
		"a file":         {Config{Dir: file, Location: saoPaulo}, "not a directory"},
		// Even root cannot create a file in /proc.
		"unwritable":   {Config{Dir: "/proc", Location: saoPaulo}, "not writable"},
		"no time zone": {Config{Dir: dir}, "time zone"},
	}
	for name, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory check left files: %v", entries)
	}
	// An age of 0 keeps forever, and is no error.
	if err := ages(InboxBodies, 0).Validate(); err != nil {
		t.Errorf("age 0: %v", err)
	}
}

// The horizon: now less the age; for a kind bound to months, no later
// than the end of the last closed month in the ledger's zone, and nothing
// with no month closed; nothing with an age of 0.
func TestHorizonHoldsBackOpenMonthsAndAgeZero(t *testing.T) {
	t.Parallel()
	march := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	endOfMarch := time.Date(2027, 4, 1, 0, 0, 0, 0, saoPaulo)
	cases := []struct {
		name   string
		kind   Kind
		age    time.Duration
		closed *time.Time
		want   time.Time
		ok     bool
	}{
		{"age 0 keeps forever", WebhookAttempts, 0, nil, time.Time{}, false},
		{"no month closed holds inbox bodies", InboxBodies, 90 * day, nil, time.Time{}, false},
		{"no month closed holds lines", ReconciliationLines, 90 * day, nil, time.Time{}, false},
		{"no month closed: outbox by age alone", Outbox, 90 * day, nil, now.Add(-90 * day), true},
		{"the closed month's end comes first", InboxBodies, 30 * day, &march, endOfMarch, true},
		{"the age comes first", Statements, 400 * day, &march, now.Add(-400 * day), true},
	}
	for _, c := range cases {
		got, ok := Horizon(c.kind, c.age, now, c.closed, saoPaulo)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
