package charges

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgarray"
	"github.com/razao/razao/internal/sqlstmt"
)

// Every statement this package runs over its tables, charges,
// access_grants and refund_aliases, is in this file: a registration and
// the reads of a charge (Register, Get, GetDetail); the delivery path's,
// Applier's prepared once (LockTx, WriteTx, EnsureGrantTx), and the plain
// reads the inbox's processor calls (GrantMissing, BookedFor). No other
// package writes these tables.

// chargeColumns are the columns of a Charge.
const chargeColumns = `id, psp_ref, merchant, amount, currency, partner, commission_bp, access, metadata, state,
	paid_amount, fee, commission, paid_at, paid_ref, refunded_amount, failed_at, request_hash, created_at, updated_at`

// registerSQL records a charge unless its id (or PSP reference) is
// taken, returning it (Register).
const registerSQL = `INSERT INTO charges (id, psp_ref, amount, currency, partner, commission_bp, access, metadata, request_hash, merchant)
		VALUES ($1, NULLIF($2, ''), $3, $4, NULLIF($5, ''), $6, $7, $8, $9, NULLIF($10, ''))
		ON CONFLICT DO NOTHING RETURNING ` + chargeColumns

// getChargeSQL reads a charge by id (Get).
const getChargeSQL = `SELECT ` + chargeColumns + ` FROM charges WHERE id = $1`

// getGrantSQL reads a charge's access grant (GetDetail).
const getGrantSQL = `SELECT access, granted_at FROM access_grants WHERE charge_id = $1`

// lockChargesSQL locks charges by id or PSP reference in id order.
const lockChargesSQL = `SELECT ` + chargeColumns + ` FROM charges
	WHERE id = ANY($1) OR psp_ref = ANY($2) ORDER BY id FOR UPDATE`

// existChargesSQL reads, without a lock, which of the charges named by id
// or PSP reference exist (Locked.readBusy).
const existChargesSQL = `SELECT id, psp_ref FROM charges WHERE id = ANY($1) OR psp_ref = ANY($2)`

// readGrantsRefundsSQL reads which charges have their grant and the
// refunds booked against them: whether each was booked from a statement
// file's line ($2 is StatementRefundType) and its other id, if paired.
// It reads posting_sets and the inbox too, in the same statement: it is
// one prepared round trip of the locked transaction, and the inbox's
// side could not come from package inbox, which imports this one.
const readGrantsRefundsSQL = `
	SELECT charge_id, '' AS refund_id, 0::bigint AS amount, NULL::timestamptz AS at, false AS statement, '' AS alias_id
	FROM access_grants WHERE charge_id = ANY($1)
	UNION ALL
	SELECT s.charge_id, s.refund_id, s.amount, s.event_at, coalesce(i.event_type = $2, false), coalesce(a.alias_id, '')
	FROM posting_sets s
	LEFT JOIN inbox i ON i.id = s.inbox_id
	LEFT JOIN refund_aliases a ON a.charge_id = s.charge_id AND a.refund_id = s.refund_id
	WHERE s.kind = 'refund' AND s.charge_id = ANY($1)
	ORDER BY 1, 4`

// writeChargesSQL writes the changed charges and the new grants in one
// statement; either array may be empty.
const writeChargesSQL = `
	WITH changed AS (
		UPDATE charges c SET state = u.state, paid_amount = u.paid_amount, fee = u.fee,
			commission = u.commission, paid_at = u.paid_at, paid_ref = u.paid_ref, refunded_amount = u.refunded_amount,
			failed_at = u.failed_at, updated_at = now()
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::timestamptz[], $7::text[],
			$8::bigint[], $9::timestamptz[]) AS u (id, state, paid_amount, fee, commission, paid_at, paid_ref, refunded_amount, failed_at)
		WHERE c.id = u.id
	)
	INSERT INTO access_grants (charge_id, access)
	SELECT * FROM unnest($10::text[], $11::text[]) ON CONFLICT DO NOTHING`

// insertAliasesSQL pairs booked refunds with their other id
// (Locked.writeAliases).
const insertAliasesSQL = `INSERT INTO refund_aliases (charge_id, refund_id, alias_id, inbox_id)
		SELECT c, r, a, nullif(i, 0) FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS u (c, r, a, i)`

// grantMissingSQL: see GrantMissing.
const grantMissingSQL = `SELECT EXISTS (
		SELECT 1 FROM charges c WHERE (c.id = $1 OR ($1 = '' AND c.psp_ref = NULLIF($2, '')))
		  AND c.state IN ('paid', 'partially_refunded', 'refunded')
		  AND NOT EXISTS (SELECT 1 FROM access_grants g WHERE g.charge_id = c.id))`

// bookedForSQL is, for each event razao cannot book ($1 its charge id, $2
// its payment reference for a charge it names only by that, $3 its refund
// id), what the ledger booked of it: the refund under that id, or, for a
// payment, the charge's sale. The sets are found through the charges, in
// one statement with them.
const bookedForSQL = `
	SELECT u.n, coalesce(s.refund_id, '') AS refund_id, s.amount
	FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u (c, p, r, n)
	JOIN LATERAL (SELECT id FROM charges WHERE (u.c <> '' AND id = u.c) OR (u.c = '' AND u.p <> '' AND paid_ref = u.p) LIMIT 1) ch ON true
	JOIN posting_sets s ON s.charge_id = ch.id
		AND CASE WHEN u.r = '' THEN s.kind = 'sale' ELSE s.kind = 'refund' AND s.refund_id = u.r END`

// GrantMissing reports whether the paid charge an event names (by our id,
// else by the PSP's reference) lacks its grant: a plain read, so that a
// storm of duplicates of a processed payment does not queue on the
// charge's row lock only to find the grant there.
func GrantMissing(ctx context.Context, q sqlx.QueryerContext, id, pspRef string) (bool, error) {
	var missing bool
	err := sqlx.GetContext(ctx, q, &missing, grantMissingSQL, id, pspRef)
	return missing, err
}

// BookingRef names what the ledger may have booked of an event razao
// cannot book: its charge, by our id, or by the PaymentRef of a payment
// when the event names its charge only by that; and its refund id, "" for
// the payment itself.
type BookingRef struct {
	ChargeID, PaymentRef, RefundID string
}

// Booked is what the ledger booked of refs[Index] (see BookedFor): the
// refund under its id, or for a payment the charge's sale.
type Booked struct {
	Index    int
	RefundID string
	Amount   int64
}

// BookedFor reads, in one statement, what the ledger booked of each of
// refs; a ref of which it booked nothing has no Booked.
func BookedFor(ctx context.Context, q sqlx.QueryerContext, refs []BookingRef) ([]Booked, error) {
	chargeIDs, payments, refunds := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		chargeIDs[i], payments[i], refunds[i] = r.ChargeID, r.PaymentRef, r.RefundID
	}
	var rows []struct {
		N        int64  `db:"n"`
		RefundID string `db:"refund_id"`
		Amount   int64  `db:"amount"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, bookedForSQL, pgarray.Text(chargeIDs), pgarray.Text(payments), pgarray.Text(refunds)); err != nil {
		return nil, err
	}
	out := make([]Booked, len(rows))
	for i, r := range rows {
		out[i] = Booked{Index: int(r.N - 1), RefundID: r.RefundID, Amount: r.Amount}
	}
	return out, nil
}

// exec runs the prepared statement s in tx.
func exec(ctx context.Context, tx *sqlx.Tx, s *sqlstmt.Stmt, args ...any) error {
	stmt, err := s.In(ctx, tx)
	if err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx, args...)
	return err
}

// query runs the prepared statement s in tx and scans its rows into dest.
func query(ctx context.Context, tx *sqlx.Tx, dest any, s *sqlstmt.Stmt, args ...any) error {
	stmt, err := s.In(ctx, tx)
	if err != nil {
		return err
	}
	return stmt.SelectContext(ctx, dest, args...)
}
