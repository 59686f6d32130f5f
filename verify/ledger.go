package verify

import (
	"strings"

	"github.com/lib/pq"

	"github.com/razao/razao/money"
)

// setLabel names a posting set s in a breach line: "set 12 (refund of
// charge ch-1)", "set 15 (payout for partner partner-42)".
const setLabel = `('set ' || s.id || ' (' || s.kind || coalesce(' of charge ' || s.charge_id, '') ||
	coalesce(' for partner ' || s.partner, '') || ')')`

// sqlCheck is a plain SQL query, independent of the Go that writes the
// ledger and of the triggers that guard it: it returns the rows that break
// one invariant, one readable line each.
type sqlCheck struct {
	name, query string
	args        []any
	// scope says what an incremental run does with the check (scope.go).
	scope scope
}

// ledgerChecks lists verify's SQL checks.
func ledgerChecks() []sqlCheck {
	shapes, payablePrefix := templateShapes()
	var slotKinds, slotCodes, shapeKinds, shapeTexts, descKinds, descTexts []string
	var slotDebits []bool
	var slotBits, shapeMasks []int64
	for k, ss := range shapes {
		bits := map[string]int64{}
		for _, s := range ss {
			var mask int64
			for _, leg := range strings.Split(s, ", ") {
				if _, ok := bits[leg]; !ok {
					bits[leg] = 1 << len(bits)
					side, code, _ := strings.Cut(leg, " ")
					slotKinds, slotDebits, slotCodes = append(slotKinds, string(k)), append(slotDebits, side == "D"), append(slotCodes, code)
					slotBits = append(slotBits, bits[leg])
				}
				mask |= bits[leg]
			}
			shapeKinds, shapeMasks, shapeTexts = append(shapeKinds, string(k)), append(shapeMasks, mask), append(shapeTexts, s)
		}
		descKinds, descTexts = append(descKinds, string(k)), append(descTexts, describeShapes(ss))
	}
	return []sqlCheck{
		{"every posting set has at least two postings", `
		SELECT ` + setLabel + ` || ' has ' || count(p.id) || ' posting(s)' FROM posting_sets s LEFT JOIN postings p ON p.posting_set_id = s.id AND p.competence_month >= {from}
		WHERE s.competence >= {from}
		GROUP BY s.id, s.kind, s.charge_id, s.partner HAVING count(p.id) < 2 ORDER BY s.id`, nil, perSet},
		{"every posting set balances per currency", `
		SELECT ` + setLabel + ` || ': its ' || b.currency || ' legs sum to ' || b.total
		FROM (SELECT posting_set_id, currency, sum(amount) AS total FROM postings WHERE competence_month >= {from}
			GROUP BY posting_set_id, currency HAVING sum(amount) <> 0::numeric) b
		JOIN posting_sets s ON s.id = b.posting_set_id ORDER BY s.id, b.currency`, nil, perSet},
		{"all postings sum to zero per currency", `
		SELECT currency || ' ' || sum(amount) FROM postings GROUP BY currency HAVING sum(amount) <> 0::numeric`, nil, fullOnly},
		{"no posting has a zero amount", `
		SELECT 'posting ' || id FROM postings WHERE amount = 0 AND competence_month >= {from}`, nil, perSet},
		{"every posting is on an existing account of its currency", `
		SELECT 'posting ' || p.id FROM postings p LEFT JOIN ONLY accounts a ON a.id = p.account_id
		WHERE (a.id IS NULL OR a.currency <> p.currency) AND p.competence_month >= {from}`, nil, perSet},
		{"every posting is in an existing set, in its competence month", `
		SELECT 'posting ' || p.id || CASE WHEN NOT EXISTS (SELECT 1 FROM posting_sets o WHERE o.id = p.posting_set_id)
			THEN ' of no set' ELSE ' in another month than its set' END
		FROM postings p
		-- Its set in its own month, which is in the window: the window's
		-- partitions of posting_sets only (competence is their key), not
		-- every set of every month. Only a breach looks further.
		WHERE p.competence_month >= {from} AND NOT EXISTS (SELECT 1 FROM posting_sets s WHERE s.id = p.posting_set_id
			AND s.competence_month = p.competence_month AND s.competence >= {from})`, nil, perSet},
		// A row of a table that inherits from a ledger table reads as one
		// of its rows, yet none of the ledger's triggers ever saw it.
		{"no table inherits from a ledger table", `
		SELECT c.relname || ' inherits from ' || pc.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class pc ON pc.oid = i.inhparent
		-- A partition (posting_sets' and postings', sql/0056) carries its
		-- parent's triggers, which the schema checks hold it to.
		WHERE i.inhparent IN (SELECT to_regclass(t) FROM unnest(ARRAY['accounts', 'posting_sets', 'postings',
			'closed_periods', 'month_snapshots', 'trial_balance_snapshots']) AS t)
			AND NOT c.relispartition
		ORDER BY 1`, nil, always},
		// posting_set_keys holds every set's unique business keys, one row
		// a set (sql/0056): a set without its key escaped the keys' unique
		// indexes; a key without its set holds a business key for nothing.
		{"every posting set has its key, alike", `
		SELECT ` + setLabel + ` || ' has no key in posting_set_keys, or one that says otherwise' FROM posting_sets s
		WHERE s.competence >= {from} AND NOT EXISTS (SELECT 1 FROM posting_set_keys k WHERE k.id = s.id AND k.idempotency_key = s.idempotency_key
			AND k.kind = s.kind AND k.competence = s.competence AND k.amount = s.amount AND k.charge_id IS NOT DISTINCT FROM s.charge_id
			AND k.refund_id IS NOT DISTINCT FROM s.refund_id AND k.reverses IS NOT DISTINCT FROM s.reverses)
		ORDER BY s.id`, nil, perSet},
		{"every key is a posting set's", `
		SELECT 'key ' || k.id || ' (' || k.idempotency_key || ') has no posting set' FROM posting_set_keys k
		WHERE k.competence >= {from} AND NOT EXISTS (SELECT 1 FROM posting_sets s WHERE s.id = k.id AND s.competence = k.competence
			AND s.competence >= {from})
		ORDER BY k.id`, nil, perSet},
		{"at most one sale and one commission per charge", `
		SELECT kind || ' of charge ' || charge_id FROM posting_sets WHERE kind IN ('sale', 'commission') AND ` + touched("charge_id") + `
		GROUP BY kind, charge_id HAVING count(*) > 1`, nil, perSet},
		{"no refund without a sale, refunds within their sale", `
		SELECT 'charge ' || r.charge_id || ' refunded ' || sum(r.amount) || ' of ' || coalesce(max(s.amount), 0)
		FROM posting_sets r LEFT JOIN posting_sets s ON s.kind = 'sale' AND s.charge_id = r.charge_id
		WHERE r.kind = 'refund' AND ` + touched("r.charge_id") + ` GROUP BY r.charge_id HAVING sum(r.amount) > coalesce(max(s.amount), 0)::numeric`, nil, perSet},
		{"commission reversals within their commission", `
		SELECT 'charge ' || r.charge_id FROM posting_sets r LEFT JOIN posting_sets c ON c.kind = 'commission' AND c.charge_id = r.charge_id
		WHERE r.kind = 'commission_reversal' AND ` + touched("r.charge_id") + ` GROUP BY r.charge_id HAVING sum(r.amount) > coalesce(max(c.amount), 0)::numeric`, nil, perSet},
		// A reversal is of one refund (the refund set of its charge under
		// its refund id, booked with it: postings.CommissionReversalSet) and
		// of the partner the charge's commission went to.
		{"every commission reversal is of a refund of its charge, for its commission's partner", `
		SELECT ` + setLabel + ` || CASE WHEN NOT x.refunded
				THEN ' reverses commission for refund ' || coalesce(s.refund_id, '(none)') || ', which its charge has no refund set for'
				ELSE ' reverses commission for partner ' || coalesce(s.partner, '(none)') || ', but the charge''s commission went to ' ||
					coalesce(x.partner, 'no partner') END
		FROM posting_sets s CROSS JOIN LATERAL (SELECT
			EXISTS (SELECT 1 FROM posting_sets r WHERE r.kind = 'refund' AND r.charge_id = s.charge_id AND r.refund_id = s.refund_id) AS refunded,
			(SELECT c.partner FROM posting_sets c WHERE c.kind = 'commission' AND c.charge_id = s.charge_id) AS partner) x
		WHERE s.kind = 'commission_reversal' AND s.competence >= {from} AND (NOT x.refunded OR s.partner IS DISTINCT FROM x.partner)
		ORDER BY s.id`, nil, perSet},
		// razao books a charge's sets only once it is registered.
		{"every set of a charge is of a registered charge", `
		SELECT ` + setLabel + ` || ' names charge ' || s.charge_id || ', which is not registered'
		FROM posting_sets s WHERE s.charge_id IS NOT NULL AND s.competence >= {from} AND NOT EXISTS (SELECT 1 FROM charges c WHERE c.id = s.charge_id)
		ORDER BY s.id`, nil, perSet},
		{"a fully refunded charge reverses exactly its commission", `
		SELECT 'charge ' || s.charge_id || ': commission ' || c.amount || ', reversed ' || coalesce(sum(r.amount), 0)
		FROM posting_sets s
		JOIN posting_sets c ON c.kind = 'commission' AND c.charge_id = s.charge_id
		LEFT JOIN posting_sets r ON r.kind = 'commission_reversal' AND r.charge_id = s.charge_id
		WHERE s.kind = 'sale' AND ` + touched("s.charge_id") + `
		  AND s.amount::numeric = (SELECT coalesce(sum(f.amount), 0::numeric) FROM posting_sets f WHERE f.kind = 'refund' AND f.charge_id = s.charge_id)
		GROUP BY s.charge_id, c.amount HAVING coalesce(sum(r.amount), 0::numeric) <> c.amount::numeric`, nil, perSet},
		// A sale's amount is its debits: with a Pix's parts, the cash that
		// came in plus the rebates and discounts it gave (postings.SaleOf),
		// which did not come in.
		{"cash equals sales - psp fees - rebates and discounts - refunds - payouts (+ adjustments)", `
		WITH cash AS (
			SELECT p.currency, sum(p.amount) AS balance FROM postings p JOIN accounts a ON a.id = p.account_id
			WHERE a.code = 'assets:cash' OR starts_with(a.code, 'assets:cash:') GROUP BY p.currency
		), fees AS (
			-- An adjustment's fee (a divergence's fee_difference) is
			-- counted once, by its cash leg below.
			SELECT p.currency, sum(p.amount) AS total FROM postings p JOIN accounts a ON a.id = p.account_id
			JOIN posting_sets s ON s.id = p.posting_set_id
			WHERE s.kind <> 'adjustment' AND (a.code = 'expenses:psp-fees'
			   OR (a.code IN ('expenses:rebates', 'expenses:discounts') AND s.kind = 'sale'))
			GROUP BY p.currency
		), adjustments AS (
			SELECT p.currency, sum(p.amount) AS total FROM postings p JOIN accounts a ON a.id = p.account_id
			JOIN posting_sets s ON s.id = p.posting_set_id
			WHERE s.kind = 'adjustment' AND (a.code = 'assets:cash' OR starts_with(a.code, 'assets:cash:')) GROUP BY p.currency
		), events AS (
			SELECT currency, sum(CASE kind WHEN 'sale' THEN amount WHEN 'refund' THEN -amount WHEN 'payout' THEN -amount ELSE 0 END) AS total
			FROM posting_sets GROUP BY currency
		), currencies AS (
			SELECT currency FROM cash UNION SELECT currency FROM events
		)
		SELECT c.currency || ': cash ' || coalesce(cash.balance, 0) || ' expected ' ||
			(coalesce(e.total, 0) - coalesce(f.total, 0) + coalesce(adj.total, 0))
		FROM currencies c LEFT JOIN cash ON cash.currency = c.currency LEFT JOIN events e ON e.currency = c.currency
		LEFT JOIN fees f ON f.currency = c.currency LEFT JOIN adjustments adj ON adj.currency = c.currency
		WHERE coalesce(cash.balance, 0) <> coalesce(e.total, 0) - coalesce(f.total, 0) + coalesce(adj.total, 0)`, nil, fullOnly},
		// Commit order, not created_at: created_at is the start of the set's
		// transaction, which may begin before a close and commit after it (a
		// correct set then looks late) or begin before it and write after it
		// (a breach then looks on time). A correct set of a month takes its
		// share of the close lock (trg_posting_sets_open_month) before the
		// close takes it exclusively, and holds it until it commits; the close
		// takes its lock before its first write, so it is given its xid only
		// once every such set has committed, each with an older xid (a set's
		// xid is assigned at its transaction's first write, at the latest the
		// set's own insert, under the lock). So a set of a closed month with a
		// newer xid than the close's was written after the close. The close's
		// xid is closed_periods.closed_xid (sql/0011) or, if older, that of
		// the month's snapshot, written by the closing transaction; both are
		// at least the close's own (rows closed before 0011 carry the
		// migration's xid), so a correct set is never reported. What it cannot
		// see: a late set whose transaction wrote something else before the
		// close (its xid is older); the triggers are the barrier for that.
		// A close closes every month up to it (sql/0035): a set of a month
		// before it, closed or not (one before the first close), written
		// after it changed the closed month's opening balances. Each set is
		// held against the first close at or after its month, by that
		// close's own xid: closes are in order, so a set written after a
		// later close was written after that one too (and after a logical
		// restore a later close's xid, of another cluster, says nothing
		// about the sets before it).
		{"no posting set written into a closed month, or one before it, after that close", `
		WITH closes AS (
			SELECT c.month, least(c.closed_xid, m.created_xid) AS close_xid
			FROM closed_periods c LEFT JOIN month_snapshots m ON m.month = c.month
		), covering AS (
			SELECT month, lag(month) OVER (ORDER BY month) AS after, close_xid FROM closes
		)
		SELECT ` + setLabel + ` || CASE WHEN s.competence_month = x.month
				THEN ' is in closed month ' || to_char(s.competence_month, 'YYYY-MM')
				ELSE ' is in month ' || to_char(s.competence_month, 'YYYY-MM') || ', before closed month ' || to_char(x.month, 'YYYY-MM') END ||
			' but was written after its close (set xid ' || s.created_xid || ' > close xid ' || x.close_xid || ')'
		FROM posting_sets s
		JOIN covering x ON s.competence_month <= x.month AND (x.after IS NULL OR s.competence_month > x.after)
		WHERE s.created_xid > x.close_xid AND s.competence >= {from} ORDER BY s.id`, nil, perSet},
		// What a set states it moves is what its legs move: legs appended to a
		// committed set (past the sealed-set trigger) change its debits.
		{"every posting set's amount is the sum of its debits in its currency", `
		SELECT ` + setLabel + ` || ': amount ' || s.amount || ' but its ' || s.currency || ' debits sum to ' || coalesce(d.debits, 0)
		FROM posting_sets s
		LEFT JOIN (SELECT posting_set_id, currency, sum(amount) AS debits FROM postings
			WHERE amount > 0 AND competence_month >= {from} GROUP BY 1, 2) d
			ON d.posting_set_id = s.id AND d.currency = s.currency
		WHERE coalesce(d.debits, 0::numeric) <> s.amount::numeric AND s.competence >= {from} ORDER BY s.id`, nil, perSet},
		// Each kind but adjustment has the legs its template builds
		// (templates.go), each once, in the set's currency, on the set's own
		// partner's payable account: a balanced pair appended to a set, or a
		// set booked on the wrong accounts, balances but is not that event.
		// Each allowed leg of a kind is a bit; a set fits when every leg is
		// an allowed one, none twice (their bits sum to their OR), and the
		// bits make one of the kind's shapes. Integers, not strings, over the
		// whole ledger; only the misfits are spelled out.
		{"every posting set has the legs its kind's template allows", `
		WITH slots AS (SELECT * FROM unnest($1::text[], $2::bool[], $3::text[], $4::bigint[]) AS l (kind, debit, code, bit)),
		shapes AS (SELECT * FROM unnest($5::text[], $6::bigint[], $7::text[]) AS v (kind, mask, shape)),
		described AS (SELECT * FROM unnest($10::text[], $11::text[]) AS d (kind, text)),
		fixed AS (SELECT l.kind, l.debit, a.id AS account_id, l.bit FROM slots l JOIN accounts a ON a.code = l.code),
		fits AS (
			SELECT s.id, s.kind, count(*) AS n, count(b.bit) AS matched, coalesce(sum(b.bit), 0) AS total, coalesce(bit_or(b.bit), 0) AS mask
			FROM posting_sets s JOIN postings p ON p.posting_set_id = s.id
			LEFT JOIN accounts pa ON pa.code = $8 || s.partner
			LEFT JOIN fixed f ON f.kind = s.kind AND f.debit = (p.amount > 0) AND f.account_id = p.account_id
			LEFT JOIN slots ps ON ps.code = $8 || $9 AND ps.kind = s.kind AND ps.debit = (p.amount > 0) AND p.account_id = pa.id
			CROSS JOIN LATERAL (SELECT CASE WHEN p.currency = s.currency THEN coalesce(f.bit, ps.bit) END AS bit) b
			WHERE s.kind IN (SELECT kind FROM shapes) AND s.competence >= {from} AND p.competence_month >= {from}
			-- Not by s.id alone: a partitioned posting_sets (sql/0056) has
			-- no primary key for kind to depend on.
			GROUP BY s.id, s.kind
		), misfits AS (
			SELECT id FROM fits f WHERE f.n <> f.matched OR f.total <> f.mask::numeric
				OR NOT EXISTS (SELECT 1 FROM shapes v WHERE v.kind = f.kind AND v.mask = f.mask)
		)
		SELECT ` + setLabel + ` || ': legs [' || (
				SELECT string_agg(g.leg, ', ' ORDER BY g.leg COLLATE "C") FROM (
					SELECT CASE WHEN p.amount > 0 THEN 'D ' ELSE 'C ' END ||
						CASE WHEN p.currency <> s.currency THEN p.currency || ' ' ELSE '' END || a.code AS leg
					FROM postings p JOIN accounts a ON a.id = p.account_id WHERE p.posting_set_id = s.id) g) ||
			'] are not a ' || s.kind || ' (' || (SELECT d.text FROM described d WHERE d.kind = s.kind) || ')'
		FROM posting_sets s WHERE s.id IN (SELECT id FROM misfits) ORDER BY s.id`,
			[]any{pq.Array(slotKinds), pq.Array(slotDebits), pq.Array(slotCodes), pq.Array(slotBits),
				pq.Array(shapeKinds), pq.Array(shapeMasks), pq.Array(shapeTexts), payablePrefix, partnerPlaceholder,
				pq.Array(descKinds), pq.Array(descTexts)}, perSet},
		// Reports, balances and exports carry money as int64: a balance or a
		// month's movement beyond it cannot be shown. Summed in numeric, per
		// account with its children rolled up (as the trial balance does), and
		// over all accounts together (its totals).
		{"every balance and monthly total fits in int64", `
		WITH own AS (
			SELECT account_id, competence_month AS month,
				coalesce(sum(amount) FILTER (WHERE amount > 0), 0) AS debits,
				coalesce(-sum(amount) FILTER (WHERE amount < 0), 0) AS credits
			FROM postings GROUP BY 1, 2
		), tree AS (
			SELECT a.code, c.id AS child FROM accounts a
			JOIN accounts c ON c.code = a.code OR starts_with(c.code, a.code || ':')
			UNION ALL SELECT NULL, id FROM accounts
		), rolled AS (
			SELECT t.code, o.month, sum(o.debits) AS debits, sum(o.credits) AS credits
			FROM tree t JOIN own o ON o.account_id = t.child GROUP BY t.code, o.month
		), figures AS (
			SELECT code, month, debits, credits, sum(debits - credits) OVER (PARTITION BY code ORDER BY month) AS balance
			FROM rolled
		)
		SELECT coalesce('account ' || f.code, 'all accounts together') || ': ' || v.what || ' ' || v.amount || ', beyond int64'
		FROM figures f, LATERAL (VALUES
			(1, 'debits in ' || to_char(f.month, 'YYYY-MM') || ' total', f.debits),
			(2, 'credits in ' || to_char(f.month, 'YYYY-MM') || ' total', f.credits),
			(3, 'balance at the end of ' || to_char(f.month, 'YYYY-MM') || ' is', f.balance)) AS v (n, what, amount)
		WHERE v.amount NOT BETWEEN -9223372036854775808::numeric AND 9223372036854775807::numeric
		ORDER BY f.code NULLS LAST, f.month, v.n`, nil, fullOnly},
		// A charge's figures are what its sets book: refunds and commission
		// shown to the selling app and used for the next refund's reversal.
		{"every charge's refunded_amount is the sum of its refund sets", `
		SELECT 'charge ' || c.id || ': refunded_amount ' || c.refunded_amount || ' but its refund sets total ' || coalesce(r.total, 0)
		FROM charges c LEFT JOIN (SELECT charge_id, sum(amount) AS total FROM posting_sets WHERE kind = 'refund' GROUP BY charge_id) r
			ON r.charge_id = c.id
		WHERE c.refunded_amount::numeric <> coalesce(r.total, 0::numeric) AND ` + touched("c.id") + ` ORDER BY c.id`, nil, perSet},
		{"every paid charge's commission is its commission set's amount", `
		SELECT 'charge ' || c.id || ': commission ' || c.commission || ' but ' ||
			coalesce('its commission set ' || s.id || ' books ' || s.amount, 'it has no commission set')
		FROM charges c LEFT JOIN posting_sets s ON s.kind = 'commission' AND s.charge_id = c.id
		WHERE c.paid_amount IS NOT NULL AND c.commission <> coalesce(s.amount, 0) AND ` + touched("c.id") + ` ORDER BY c.id`, nil, perSet},
		// The snapshot's figures are compared with the postings
		// (CheckSnapshots); its currency is the ledger's.
		{"every closed month's snapshot is in the revenue account's currency", `
		SELECT 'month ' || to_char(m.month, 'YYYY-MM') || ': its snapshot is in ' || m.currency || ', the revenue account in ' || a.currency
		FROM month_snapshots m JOIN accounts a ON a.code = 'income:revenue'
		WHERE m.currency <> a.currency ORDER BY m.month`, nil, always},
		// sql/0016's ceilings guard new rows (NOT VALID where an older row
		// was beyond them): verify reports every row beyond them, and any
		// of them gone.
		{"every amount is within the ceiling of sql/0016, and its constraints stand", `
		SELECT ` + setLabel + ` || ': amount ' || s.amount || ' is beyond the ceiling of ' || $1::bigint
		FROM posting_sets s WHERE s.amount > $1::bigint AND s.competence >= {from}
		UNION ALL
		SELECT 'posting ' || p.id || ' of set ' || p.posting_set_id || ': amount ' || p.amount || ' is beyond the ceiling of ' || $1::bigint
		FROM postings p WHERE (p.amount > $1::bigint OR p.amount < -$1::bigint) AND p.competence_month >= {from}
		UNION ALL
		SELECT 'charge ' || c.id || ': amount ' || c.amount || ' is beyond the ceiling of ' || $1::bigint
		FROM charges c WHERE c.amount > $1::bigint AND ` + touched("c.id") + `
		UNION ALL
		SELECT 'constraint ' || w.name || ' on ' || w.tab || coalesce(' is defined as ' || k.def || ', not ' || w.def, ' is missing')
		FROM (VALUES ('posting_sets', 'ck_posting_sets_amount_ceiling', 'CHECK ((amount <= ''' || $1::bigint || '''::bigint))'),
			('postings', 'ck_postings_amount_ceiling',
				'CHECK (((amount <= ''' || $1::bigint || '''::bigint) AND (amount >= ''' || -$1::bigint || '''::bigint)))'),
			('charges', 'ck_charges_amount_ceiling', 'CHECK ((amount <= ''' || $1::bigint || '''::bigint))')) w (tab, name, def)
		LEFT JOIN LATERAL (SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
			WHERE c.conname = w.name AND c.conrelid = w.tab::regclass::oid) k ON true
		WHERE k.def IS NULL OR k.def NOT IN (w.def, w.def || ' NOT VALID')`,
			[]any{money.Ceiling}, perSet},
	}
}

// rowSecurityCheck is the check that stops verify before it reads the
// ledger: no table of its schema under row-level security (no migration
// enables it: a policy could hide rows from the triggers' queries, which
// sql/0035 makes fail instead, and from verify's).
func rowSecurityCheck(schema string) sqlCheck {
	return sqlCheck{"no table of the ledger's schema has row-level security on", `
		SELECT 'table ' || c.relname || ' has row-level security ' || CASE WHEN c.relforcerowsecurity THEN 'forced' ELSE 'on' END ||
			coalesce(' (policies: ' || (SELECT string_agg(p.polname, ', ' ORDER BY p.polname) FROM pg_policy p WHERE p.polrelid = c.oid) || ')', '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1::text AND (c.relrowsecurity OR c.relforcerowsecurity) ORDER BY c.relname`, []any{schema}, always}
}

// elsewhereCheck names another schema holding a ledger (its three core
// tables): verify finds the schema it checks through its session's
// search_path, which a role may set for itself, so the one it checked
// may not be the one the service writes.
func elsewhereCheck(schema string) sqlCheck {
	return sqlCheck{"no other schema holds a ledger", `
		SELECT 'schema ' || n.nspname || ' also holds a ledger (posting_sets, postings, closed_periods; verify checked ' || $1::text || ')'
		FROM pg_namespace n
		WHERE n.nspname <> $1::text AND n.nspname NOT LIKE 'pg\_temp\_%' AND (SELECT count(*) FROM pg_class c
			WHERE c.relnamespace = n.oid AND c.relname IN ('posting_sets', 'postings', 'closed_periods') AND c.relkind IN ('r', 'p', 'v', 'm', 'f')) = 3
		ORDER BY n.nspname`, []any{schema}, always}
}

// periodChecks lists the checks of closed months and competence months
// against each other and the clock. verify has no calendar of the
// ledger's time zone, so "now" is read in the zone whose day begins first
// (Pacific/Kiritimati, UTC+14): a month reported as not ended has not
// ended anywhere, whatever zone the ledger closes months in.
func periodChecks() []sqlCheck {
	const today = `(now() AT TIME ZONE 'Pacific/Kiritimati')`
	return []sqlCheck{
		// Months close in order: a closed month after an open one shuts the
		// open one's late events out of nowhere, and hides it from reports.
		{"closed months are consecutive", `
		SELECT 'month ' || to_char(c.month, 'YYYY-MM') || ' is closed but ' ||
			to_char(c.prev + interval '1 month', 'YYYY-MM') ||
			CASE WHEN c.prev + interval '2 month' < c.month THEN '..' || to_char(c.month - interval '1 month', 'YYYY-MM') ELSE '' END ||
			' before it ' || CASE WHEN c.prev + interval '2 month' < c.month THEN 'are' ELSE 'is' END || ' open'
		FROM (SELECT month, lag(month) OVER (ORDER BY month) AS prev FROM closed_periods) c
		WHERE c.prev IS NOT NULL AND c.month <> (c.prev + interval '1 month')::date ORDER BY c.month`, nil, always},
		{"no closed month has not ended yet", `
		SELECT 'month ' || to_char(month, 'YYYY-MM') || ' is closed but has not ended yet (closed at ' || closed_at || ' by ' || closed_by || ')'
		FROM closed_periods WHERE month + interval '1 month' > ` + today + ` ORDER BY month`, nil, always},
		// A set may be booked into next month (a late-evening event read in
		// another zone), never further.
		{"no posting set is in a month after the next one", `
		SELECT ` + setLabel + ` || ' is in competence month ' || to_char(s.competence_month, 'YYYY-MM') ||
			', after next month ' || to_char(date_trunc('month', ` + today + `) + interval '1 month', 'YYYY-MM')
		FROM posting_sets s WHERE s.competence_month > date_trunc('month', ` + today + `) + interval '1 month' ORDER BY s.id`, nil, always},
	}
}

// listCheck makes a check of breaches found in Go.
func listCheck(name string, breaches []string) Check {
	c := Check{Name: name, Breaches: int64(len(breaches)), Examples: breaches}
	if len(breaches) > maxExamples {
		c.Examples = breaches[:maxExamples]
	}
	return c
}
