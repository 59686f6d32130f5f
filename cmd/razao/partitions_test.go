package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/razao/razao/postings"
)

// refusal says how a write was refused: by the trigger or index named
// (pq.Error.Constraint), or for want of a privilege (42501).
func refusal(err error) string {
	var pqErr *pq.Error
	switch {
	case err == nil:
		return "accepted"
	case !errors.As(err, &pqErr):
		return err.Error()
	case pqErr.Code == "42501":
		return "permission denied"
	case pqErr.Constraint != "":
		return pqErr.Constraint
	}
	return string(pqErr.Code) + " " + pqErr.Message
}

// posting_sets and postings are partitioned by month (sql/0056). A
// partition written by name fires its own statement triggers, not its
// parent's, and its clones of the parent's row triggers: each write the
// parents refuse is refused on each kind of partition (the past one, a
// month's, the DEFAULT one), by the same trigger or index, for the owner
// (a superuser here: no privilege stops it). The service role has no
// right on a partition at all: it writes through the parents. A
// temporary table named like a partition steers nothing.
func TestPartitionsWrittenByNameRefuseWhatTheirParentsRefuse(t *testing.T) {
	t.Parallel()
	e := newBarrierEnv(t)
	month := e.firstMonthPartition(t)
	ym := strings.TrimPrefix(month, "posting_sets_") // 2027_02
	first := strings.Replace(ym, "_", "-", 1) + "-01"
	day := first[:8] + "10"
	// A set in that month and one in the DEFAULT partition (a month no
	// partition was made for), written through the parents as the owner.
	for key, d := range map[string]string{"in-month": day, "in-default": "2035-03-10"} {
		tx := e.owner.MustBegin()
		if err := rawSetIn(tx, key, d); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	var inDefault string
	if err := e.owner.Get(&inDefault, `SELECT tableoid::regclass::text FROM posting_sets WHERE idempotency_key = 'in-default'`); err != nil || inDefault != "posting_sets_default" {
		t.Fatalf("a set of 2035-03 is in %q (%v), want posting_sets_default", inDefault, err)
	}
	sets := e.count(t, `SELECT count(*) FROM posting_sets`)
	legs := e.count(t, `SELECT count(*) FROM postings`)
	var saleKey string
	if err := e.owner.Get(&saleKey, `SELECT idempotency_key FROM posting_sets WHERE id = $1`, e.saleID); err != nil {
		t.Fatal(err)
	}

	setSQL := func(table, key, kind, charge string, amount int64, competence string) string {
		return fmt.Sprintf(`INSERT INTO %s (kind, idempotency_key, amount, currency, competence, event_at, charge_id, refund_id, content_hash)
			VALUES ('%s', '%s', %d, 'BRL', '%s', now(), %s, %s, 'x')`, table, kind, key, amount, competence,
			map[bool]string{true: "'" + charge + "'", false: "NULL"}[charge != ""],
			map[bool]string{true: "'rf-9'", false: "NULL"}[kind == "refund"])
	}
	postingsOf := func(table string) string { return strings.Replace(table, "posting_sets", "postings", 1) }
	legSQL := func(table, set, monthStart string, debit, credit int64) string {
		return fmt.Sprintf(`INSERT INTO %s (posting_set_id, account_id, currency, amount, competence_month)
			SELECT %s, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN %d ELSE %d END, '%s'
			FROM accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, table, set, debit, -credit, monthStart)
	}
	// Each partition: the first day and a day of an open month in it, and
	// a set it holds, with its month.
	partitions := []struct{ sets, first, day, row, rowMonth string }{
		{"posting_sets_past", "2026-09-01", "2026-09-10", fmt.Sprint(e.saleID), "2026-08-01"},
		{month, first, day, `(SELECT id FROM posting_sets WHERE idempotency_key = 'in-month')`, first},
		{"posting_sets_default", "2035-03-01", "2035-03-10", `(SELECT id FROM posting_sets WHERE idempotency_key = 'in-default')`, "2035-03-01"},
	}
	for _, p := range partitions {
		for _, c := range []struct {
			name  string
			steps []string
			want  string
		}{
			{"UPDATE a set", []string{`UPDATE ` + p.sets + ` SET amount = amount + 1 WHERE id = ` + p.row}, "trg_posting_sets_append_only"},
			{"DELETE a set", []string{`DELETE FROM ` + p.sets + ` WHERE id = ` + p.row}, "trg_posting_sets_append_only"},
			{"UPDATE a posting", []string{`UPDATE ` + postingsOf(p.sets) + ` SET amount = 0 WHERE posting_set_id = ` + p.row}, "trg_postings_append_only"},
			{"DELETE a posting", []string{`DELETE FROM ` + postingsOf(p.sets) + ` WHERE posting_set_id = ` + p.row}, "trg_postings_append_only"},
			{"TRUNCATE the sets", []string{`TRUNCATE ` + p.sets}, "trg_posting_sets_no_truncate"},
			{"TRUNCATE the postings", []string{`TRUNCATE ` + postingsOf(p.sets)}, "trg_postings_no_truncate"},
			{"an unbalanced set", []string{setSQL(p.sets, "unbalanced", "adjustment", "", 500, p.day),
				legSQL(postingsOf(p.sets), lastSet, p.first, 500, 400)}, "trg_posting_sets_balanced"},
			{"a set of one leg", []string{setSQL(p.sets, "one-leg", "adjustment", "", 500, p.day),
				`INSERT INTO ` + postingsOf(p.sets) + ` (posting_set_id, account_id, currency, amount, competence_month)
					SELECT ` + lastSet + `, id, 'BRL', 500, '` + p.first + `' FROM accounts WHERE code = 'assets:cash'`}, "trg_posting_sets_balanced"},
			{"a second sale of charge c1", []string{setSQL(p.sets, "sale-again", "sale", "c1", 100, p.day),
				legSQL(postingsOf(p.sets), lastSet, p.first, 100, 100)}, "uq_sale_per_charge"},
			{"a refund above its sale", []string{setSQL(p.sets, "refund-above", "refund", "c1", 1000, p.day),
				legSQL(postingsOf(p.sets), lastSet, p.first, 1000, 1000)}, "trg_refunds_within_sale"},
			{"the key of the sale again", []string{setSQL(p.sets, saleKey, "adjustment", "", 100, p.day),
				legSQL(postingsOf(p.sets), lastSet, p.first, 100, 100)}, "uq_posting_sets_idempotency_key"},
			{"legs added to a sealed set", []string{legSQL(postingsOf(p.sets), p.row, p.rowMonth, 7, 7)}, "trg_postings_sealed_set"},
			{"a set with another writer's xid", []string{strings.Replace(strings.Replace(setSQL(p.sets, "xid", "adjustment", "", 500, p.day),
				"content_hash)", "content_hash, created_xid)", 1), "'x')", "'x', '1'::xid8)", 1)}, "trg_posting_sets_written_open"},
		} {
			t.Run(p.sets+"/"+c.name, func(t *testing.T) {
				if got := refusal(e.ownerAttack(t, c.steps...)); got != c.want {
					t.Errorf("the owner: %s, want refused by %s", got, c.want)
				}
				if got := refusal(e.attack(t, c.steps...)); got != "permission denied" {
					t.Errorf("the service role: %s, want permission denied", got)
				}
			})
		}
		t.Run(p.sets+"/a set in a closed month", func(t *testing.T) {
			if p.sets != "posting_sets_past" {
				t.Skip("only the past partition holds August")
			}
			err := e.ownerAttack(t, setSQL(p.sets, "closed", "adjustment", "", 500, "2026-08-20"),
				legSQL(postingsOf(p.sets), lastSet, "2026-08-01", 500, 500))
			if got := refusal(err); got != "trg_posting_sets_open_month" || !errors.Is(err, postings.ErrClosedMonth) {
				t.Errorf("the owner: %s, want refused by trg_posting_sets_open_month", got)
			}
		})
	}
	// Temporary tables named like the partitions, in the service role's
	// own session, are no partitions: the parents route past them, and
	// the checks read the ledger's tables.
	t.Run("temporary tables named like partitions", func(t *testing.T) {
		err := e.attack(t,
			`CREATE TEMP TABLE `+month+` (LIKE public.posting_sets) ON COMMIT DROP`,
			`CREATE TEMP TABLE postings_`+ym+` (LIKE public.postings) ON COMMIT DROP`,
			`CREATE TEMP TABLE posting_set_keys (LIKE public.posting_set_keys) ON COMMIT DROP`,
			setSQL("public.posting_sets", "shadowed", "adjustment", "", 500, day),
			legSQL("public.postings", lastSet, first, 500, 400))
		if got := refusal(err); got != "trg_posting_sets_balanced" {
			t.Errorf("an unbalanced set beside shadow partitions: %s, want refused by trg_posting_sets_balanced", got)
		}
		err = e.attack(t,
			`CREATE TEMP TABLE posting_set_keys (LIKE public.posting_set_keys) ON COMMIT DROP`,
			setSQL("public.posting_sets", "sale-shadowed", "sale", "c1", 100, day),
			legSQL("public.postings", lastSet, first, 100, 100))
		if got := refusal(err); got != "uq_sale_per_charge" {
			t.Errorf("a second sale beside a shadow key table: %s, want refused by uq_sale_per_charge", got)
		}
	})
	if n := e.count(t, `SELECT count(*) FROM posting_sets`); n != sets {
		t.Errorf("%d posting sets, want the %d from before", n, sets)
	}
	if n := e.count(t, `SELECT count(*) FROM postings`); n != legs {
		t.Errorf("%d postings, want the %d from before", n, legs)
	}
}

// firstMonthPartition makes the months after the past partition through
// three months from now, as a close would (or the owner, by hand), and
// names the first of them: posting_sets_YYYY_MM.
func (e *barrierEnv) firstMonthPartition(t *testing.T) string {
	t.Helper()
	e.owner.MustExec(`SELECT ledger_ensure_month_partitions((date_trunc('month', now()) + interval '3 months')::date)`)
	var month string
	if err := e.owner.Get(&month, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'posting_sets'::regclass AND c.relname NOT IN ('posting_sets_past', 'posting_sets_default')
		ORDER BY c.relname LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	return month
}

// ownerAttack is attack on a new session of the database's owner.
func (e *barrierEnv) ownerAttack(t *testing.T, steps ...string) error {
	t.Helper()
	ctx := context.Background()
	conn, err := e.owner.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return postings.MapError(err)
		}
	}
	return postings.MapError(tx.Commit())
}
