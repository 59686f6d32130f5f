package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/batch"
	"github.com/razao/razao/internal/pgarray"
	"github.com/razao/razao/internal/sqlstmt"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook/scheme"
)

// Endpoint is what the inbox knows of the endpoint a delivery came
// through: its name, the first part of every delivery's key; the
// merchant whose charges its events may act on; its scheme, whose
// payment references and checks apply; and the most events one delivery
// may carry (a delivery with more is malformed).
type Endpoint struct {
	Name     string
	Merchant string
	MaxItems int
	Scheme   scheme.Scheme
}

// Inbox stores authentic deliveries, each exactly once per delivery key,
// due at once for the workers (see Worker), and answers after the commit.
type Inbox struct {
	db         *sqlx.DB
	group      *batch.Group[*putRequest]
	insertStmt *sqlstmt.Stmt
	// insertSharedStmt is for batches with a delivery of several events.
	insertSharedStmt *sqlstmt.Stmt
	redeliverStmt    *sqlstmt.Stmt
	proc             *Processor
	// Tracer, when set, traces each group commit (traceCommit); nil
	// traces nothing.
	Tracer trace.Tracer
}

// NewInbox returns the inbox over db, ringing proc's doorbell when it
// stores deliveries and asking proc for redeliveries' grant repairs.
func NewInbox(db *sqlx.DB, proc *Processor) *Inbox {
	in := &Inbox{db: db, insertStmt: sqlstmt.New(db, insertSQL), insertSharedStmt: sqlstmt.New(db, insertSharedSQL),
		redeliverStmt: sqlstmt.New(db, redeliverSQL), proc: proc}
	in.group = batch.New(MaxBatch, in.insertAll)
	return in
}

// entry is one inbox row to write.
type entry struct {
	key             Key
	kind, chargeRef string
	event           []byte
	status          Status
	ev              scheme.Event // what event holds, for comparing a redelivery's figures
}

// Stored says what the inbox did with one entry.
type Stored struct {
	ID        int64 // 0 for a duplicate
	Key       string
	Duplicate bool
	Ignored   bool // stored for audit only: no charge reacts to it
}

// Key is (endpoint, event type, the PSP's stable event id): what makes
// two deliveries the same notification. The inbox is unique on the three
// columns, never on a string joining them: any separator may occur in a
// PSP's event type or id.
type Key struct {
	Endpoint, EventType, EventID string
}

// String renders the key for the PSP's answer and the inbox's
// delivery_key column, each part prefixed with its length
// ("5:hodle22:DEPOSIT_ASSET_REFUNDED5:rf|77"), so that two keys never read
// alike. A key joined with '|' by an older razao cannot read like one
// either: its endpoint name, before the first '|', holds no ':'.
func (k Key) String() string {
	return fmt.Sprintf("%d:%s%d:%s%d:%s", len(k.Endpoint), k.Endpoint, len(k.EventType), k.EventType, len(k.EventID), k.EventID)
}

func entriesFor(ep *Endpoint, evs []scheme.Event, body []byte) []entry {
	out := make([]entry, 0, len(evs))
	var bodyID string // hashed once, for however many events lack an id
	for _, ev := range evs {
		id := ev.EventID
		if id == "" {
			// An ignored event may carry no id: key it by its bytes.
			if bodyID == "" {
				bodyID = "sha256:" + bodyHash(body)
			}
			id = bodyID
		}
		ref := ev.ChargeID
		if ref == "" {
			ref = ev.PSPRef
		}
		status := StatusPending
		if ev.Kind == scheme.KindIgnored || ev.Kind == scheme.KindTest {
			status = StatusIgnored
		}
		b, _ := json.Marshal(ev)
		out = append(out, entry{key: Key{ep.Name, ev.Type, id},
			kind: string(ev.Kind), chargeRef: ref, event: b, status: status, ev: ev})
	}
	return out
}

func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// Store stores a verified delivery for the endpoint ep: its events, its
// body and the headers kept for audit. It returns once they are committed
// (so the caller may say they are stored) and, for a redelivery, once
// what the redelivery asks is done (see redeliver): the one path then
// applies them. This is every source's way in: the webhook handler's, and
// any other that only stores deliveries (reconciliation) and lets the one
// path book them. An error means they may not be stored, or a
// redelivery's follow-up failed: the caller must not say they are stored
// (the webhook answers 503, and the PSP's next redelivery is answered
// "duplicate").
//
// While RunBatcher runs, concurrent calls are group-committed: one
// multi-row INSERT … ON CONFLICT DO NOTHING and one commit for all of
// them. Otherwise each call stores its delivery alone.
func (in *Inbox) Store(ctx context.Context, ep *Endpoint, evs []scheme.Event, body, headers []byte) ([]Stored, error) {
	return in.put(ctx, ep, entriesFor(ep, evs, body), body, headers)
}

func (in *Inbox) put(ctx context.Context, ep *Endpoint, entries []entry, body, headers []byte) ([]Stored, error) {
	req := &putRequest{ep: ep, entries: entries, body: body, headers: headers, span: trace.SpanContextFromContext(ctx)}
	if err := in.group.Do(ctx, req); err != nil {
		// The batch may still commit; the PSP, seeing no answer, will
		// redeliver and get "duplicate".
		return nil, err
	}
	if req.commit.IsValid() {
		// The group commit that stored it is a trace of its own, shared
		// with the other requests of its batch: linked both ways.
		trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: req.commit})
	}
	if req.err != nil {
		return nil, req.err
	}
	if len(req.repair) > 0 {
		// Before the answer: once answered, the PSP will not ask again.
		// Its own time: a repair is not cut half way for a hung-up client.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.proc.Timeout)
		defer cancel()
		if err := in.proc.repairGrants(rctx, req.repair); err != nil {
			return nil, err
		}
	}
	return req.stored, nil
}

// putRequest is one delivery waiting for its group commit.
type putRequest struct {
	ep            *Endpoint
	entries       []entry
	body, headers []byte
	stored        []Stored
	err           error
	// repair holds the stored events of applied payments it delivered
	// again, whose grants are to be re-ensured before the answer.
	repair []json.RawMessage
	// span is the request's span, if traced; commit the span of the
	// group commit that stored it.
	span, commit trace.SpanContext
}

// MaxBatch bounds the deliveries of one group commit, and of one
// processing transaction.
const MaxBatch = 64

// RunBatcher group-commits concurrent deliveries, with loops batches in
// flight at once, until ctx ends; from then on each delivery is stored
// alone. It runs once per Inbox.
func (in *Inbox) RunBatcher(ctx context.Context, loops int) { in.group.Run(ctx, loops) }

// Batching reports whether RunBatcher has started its batch loops: until
// then each Store commits its delivery alone.
func (in *Inbox) Batching() bool { return in.group.Started() }

// insertAll stores a batch, follows up its redeliveries and rings the
// workers' doorbell; its requests are answered once it returns.
func (in *Inbox) insertAll(ctx context.Context, batch []*putRequest, _ func(i int)) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	if in.Tracer != nil {
		var end func()
		ctx, end = in.traceCommit(ctx, batch)
		defer end()
	}
	in.insertBatch(ctx, batch)
	in.conflicts(ctx, batch)
	due, err := in.redeliver(ctx, batch)
	if err != nil {
		for _, r := range batch {
			if r.err == nil && r.redelivers() {
				r.err = err
			}
		}
	}
	if due || newDeliveries(batch) {
		in.proc.bell.ring()
	}
}

// traceCommit starts the span of a group commit, "inbox.group_commit":
// the parent of its statements, in a trace of its own (it serves several
// requests, each in its own trace), linked to each traced request's span,
// and each request to it (put). It returns the context of its statements
// and the span's end.
func (in *Inbox) traceCommit(ctx context.Context, batch []*putRequest) (context.Context, func()) {
	var links []trace.Link
	for _, r := range batch {
		if r.span.IsValid() {
			links = append(links, trace.Link{SpanContext: r.span})
		}
	}
	ctx, span := in.Tracer.Start(ctx, "inbox.group_commit", trace.WithNewRoot(), trace.WithLinks(links...),
		trace.WithAttributes(attrRequests.Int(len(batch))))
	for _, r := range batch {
		r.commit = span.SpanContext()
	}
	return ctx, func() {
		for _, r := range batch {
			if r.err != nil {
				// Not the error's text: it may quote a value.
				span.SetStatus(codes.Error, "a delivery of the batch was not stored")
				break
			}
		}
		span.End()
	}
}

// newDeliveries reports whether a committed batch stored a delivery to
// apply: ignored events, duplicates and failed inserts leave none.
func newDeliveries(batch []*putRequest) bool {
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i, s := range r.stored {
			if !s.Duplicate && r.entries[i].status == StatusPending {
				return true
			}
		}
	}
	return false
}

// redelivers reports whether the request delivered again something stored
// that a charge reacts to.
func (r *putRequest) redelivers() bool {
	for i, s := range r.stored {
		if s.Duplicate && r.entries[i].status == StatusPending {
			return true
		}
	}
	return false
}

// redeliver follows up the batch's redeliveries (see redeliverSQL), one
// statement for all of them, and gives each request the grant repairs it
// asks for. It reports whether it made a delivery due.
func (in *Inbox) redeliver(ctx context.Context, batch []*putRequest) (bool, error) {
	var eps, types, ids []string
	seen := map[Key]bool{}
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i, s := range r.stored {
			if k := r.entries[i].key; s.Duplicate && r.entries[i].status == StatusPending && !seen[k] {
				seen[k] = true
				eps, types, ids = append(eps, k.Endpoint), append(types, k.EventType), append(ids, k.EventID)
			}
		}
	}
	if len(eps) == 0 {
		return false, nil
	}
	stmt, err := in.redeliverStmt.Prepared(ctx)
	if err != nil {
		return false, fmt.Errorf("inbox: redelivery: %w", err)
	}
	var rows []struct {
		Endpoint  *string          `db:"endpoint"`
		EventType *string          `db:"event_type"`
		EventID   *string          `db:"event_id"`
		Event     *json.RawMessage `db:"event"`
	}
	if err := stmt.SelectContext(ctx, &rows, pq.Array(eps), pq.Array(types), pq.Array(ids)); err != nil {
		return false, fmt.Errorf("inbox: redelivery: %w", err)
	}
	due := false
	repair := map[Key]json.RawMessage{}
	for _, row := range rows {
		if row.Event == nil {
			due = true
			continue
		}
		repair[Key{*row.Endpoint, *row.EventType, *row.EventID}] = *row.Event
	}
	// Each request repairs the grants of the payments it delivered again.
	for _, r := range batch {
		for i, s := range r.stored {
			if ev, ok := repair[r.entries[i].key]; ok && s.Duplicate && r.err == nil {
				r.repair = append(r.repair, ev)
			}
		}
	}
	return due, nil
}

// insertBatch stores a batch; one bad row fails the whole statement, so on
// error each delivery is stored on its own and an error stays with the one
// that caused it.
func (in *Inbox) insertBatch(ctx context.Context, batch []*putRequest) {
	err := in.insert(ctx, batch)
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			r.err = in.insert(ctx, []*putRequest{r})
		}
		return
	}
	for _, r := range batch {
		r.err = err
	}
}

// insert writes the entries of every request in one statement in
// autocommit: one round trip, one commit. The rows are read to the end
// (ReadyForQuery, after COMMIT) before anyone is told they are stored.
// Of several entries with one key, the first in the batch is the accepted
// one and the others are duplicates.
func (in *Inbox) insert(ctx context.Context, batch []*putRequest) error {
	var keys, eps, schemes, merchants, types, ids, kinds, refs, evs, headers, statuses, sharedHeaders []string
	var bodies, shared [][]byte
	var bodyOf []int64
	for _, r := range batch {
		// Each body goes into the statement once: inline for its one
		// event, or shared by all of them.
		body, header, n := r.body, string(r.headers), int64(0)
		if len(r.entries) > 1 {
			shared, sharedHeaders = append(shared, r.body), append(sharedHeaders, string(r.headers))
			body, header, n = nil, "{}", int64(len(shared))
		}
		for _, e := range r.entries {
			keys, eps, schemes, merchants = append(keys, e.key.String()), append(eps, e.key.Endpoint), append(schemes, r.ep.Scheme.Name()), append(merchants, r.ep.Merchant)
			types, ids, kinds, refs = append(types, e.key.EventType), append(ids, e.key.EventID), append(kinds, e.kind), append(refs, e.chargeRef)
			evs, statuses = append(evs, string(e.event)), append(statuses, string(e.status))
			bodies, headers, bodyOf = append(bodies, body), append(headers, header), append(bodyOf, n)
		}
	}
	args := []any{pgarray.Text(keys), pgarray.Text(eps), pgarray.Text(schemes), pgarray.Text(merchants), pgarray.Text(types), pgarray.Text(ids),
		pgarray.Text(kinds), pgarray.Text(refs), pgarray.Text(evs), pq.Array(bodies), pgarray.Text(headers), pgarray.Text(statuses)}
	which := in.insertStmt
	if len(shared) > 0 {
		which = in.insertSharedStmt
		args = append(args, pq.Array(bodyOf), pq.Array(shared), pgarray.Text(sharedHeaders))
	}
	stmt, err := which.Prepared(ctx)
	if err != nil {
		return fmt.Errorf("inbox: insert: %w", err)
	}
	rows, err := stmt.QueryxContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("inbox: insert: %w", err)
	}
	inserted := map[Key]int64{}
	for rows.Next() {
		var id int64
		var k Key
		if err := rows.Scan(&id, &k.Endpoint, &k.EventType, &k.EventID); err != nil {
			rows.Close()
			return fmt.Errorf("inbox: scan: %w", err)
		}
		inserted[k] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("inbox: insert: %w", err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("inbox: insert: %w", err)
	}
	for _, r := range batch {
		r.stored = make([]Stored, len(r.entries))
		for i, e := range r.entries {
			id, ok := inserted[e.key]
			delete(inserted, e.key) // the first entry with a key takes it
			r.stored[i] = Stored{ID: id, Key: e.key.String(), Duplicate: !ok, Ignored: e.status == StatusIgnored}
		}
	}
	return nil
}

// StoreMalformed keeps an authentic delivery through ep whose payload
// could not be read or was refused (see Check), with a malformed
// divergence for finance, so that the PSP can stop retrying: keyed by
// deliveryID (the scheme's id of the delivery; its body's hash without
// one), a second copy being a duplicate. It returns once the delivery is
// committed.
func (in *Inbox) StoreMalformed(ctx context.Context, ep *Endpoint, deliveryID string, body, headers []byte, cause error) (Stored, error) {
	s, err := in.putMalformed(ctx, ep, deliveryID, body, headers, cause)
	if err == nil {
		in.proc.committed() // a divergence.opened event
	}
	return s, err
}

// putMalformed keeps an authentic delivery whose payload could not be
// read, with a divergence for finance, so the PSP can stop retrying.
func (in *Inbox) putMalformed(ctx context.Context, ep *Endpoint, deliveryID string, body, headers []byte, cause error) (Stored, error) {
	if deliveryID == "" {
		deliveryID = "sha256:" + bodyHash(body)
	} else if checkText(deliveryID) != nil {
		// Too long for the index, or text PostgreSQL refuses (a NUL,
		// invalid UTF-8): its hash still keys the delivery stably.
		deliveryID = "sha256:" + bodyHash([]byte(deliveryID))
	}
	key := Key{ep.Name, "malformed", deliveryID}
	tx, err := in.db.BeginTxx(ctx, nil)
	if err != nil {
		return Stored{}, fmt.Errorf("inbox: begin: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.GetContext(ctx, &id, insertMalformedSQL,
		key.String(), ep.Name, ep.Scheme.Name(), ep.Merchant, deliveryID, body, string(headers), cause.Error())
	if err != nil {
		if isNoRows(err) {
			return Stored{Key: key.String(), Duplicate: true}, nil
		}
		return Stored{}, fmt.Errorf("inbox: insert malformed: %w", err)
	}
	if err := divergences.OpenForDelivery(ctx, tx, divergences.Delivery{InboxID: id, Reason: divergences.ReasonMalformed, Detail: divergences.Unreadable(cause)}); err != nil {
		return Stored{}, err
	}
	if err := tx.Commit(); err != nil {
		return Stored{}, fmt.Errorf("inbox: commit: %w", err)
	}
	return Stored{ID: id, Key: key.String()}, nil
}

// judgedEachScheme is the scheme whose deliveries carry many events each
// judged on its own (a bcb-pix callback: each Pix and each devolução).
const judgedEachScheme = "bcb-pix"

// Check is what the inbox takes of a delivery through ep received at now,
// before it is stored: a delivery it could not store, or whose events
// would fail every time they are applied (checkEvents), or that is dated
// outside the ledger's window (checkTimes) or states an amount over its
// limit (checkAmounts), is refused with scheme.ErrMalformed, to be kept
// by StoreMalformed (400) instead of failing to store (503) or being
// answered 200 and then failing attempt after attempt. Of a bcb-pix
// callback, whose events are judged one by one, an event dated outside the
// window or over the limit becomes unbookable instead (judgeEach) and the
// rest is booked. It returns the events to store.
func (in *Inbox) Check(ep *Endpoint, evs []scheme.Event, now time.Time) ([]scheme.Event, error) {
	ledger := in.proc.applier.Ledger
	err := checkEvents(ep, evs)
	if err == nil && ep.Scheme.Name() == judgedEachScheme {
		evs = judgeEach(evs, ledger.Calendar(), ledger.Limit(), now)
	}
	if err == nil {
		err = checkTimes(evs, ledger.Calendar(), now)
	}
	if err == nil {
		err = checkAmounts(evs, ledger.Limit())
	}
	return evs, err
}

// maxIDLength bounds the ids a delivery is keyed and looked up by: longer
// ones would not fit a btree index entry, and no PSP sends them.
const maxIDLength = 256

// checkEvents refuses a delivery the inbox could not store, or whose
// events would fail every time they are applied, so that it is kept as
// malformed (400) instead of failing to store (503) or being answered 200
// and then failing attempt after attempt: too many events for the
// endpoint, an id too long for the index or with text PostgreSQL refuses,
// or a refund id too long for the posting-set keys derived from it.
func checkEvents(ep *Endpoint, evs []scheme.Event) error {
	if len(evs) > ep.MaxItems {
		return fmt.Errorf("%w: the delivery carries %d events (for bcb-pix: each Pix and each devolução), more than this endpoint's max_items of %d; send them in smaller callbacks",
			scheme.ErrMalformed, len(evs), ep.MaxItems)
	}
	for _, ev := range evs {
		for _, f := range []struct{ name, v string }{{"event id", ev.EventID}, {"event type", ev.Type},
			{"charge id", ev.ChargeID}, {"PSP reference", ev.PSPRef}, {"refund id", ev.RefundID}} {
			if err := checkText(f.v); err != nil {
				return fmt.Errorf("%w: %s %w", scheme.ErrMalformed, f.name, err)
			}
		}
		for name, v := range ev.Extra {
			if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
				return fmt.Errorf("%w: %s holds a NUL or invalid UTF-8", scheme.ErrMalformed, name)
			}
		}
		if err := checkSetKeys(ev); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses an id the inbox cannot store: longer than
// maxIDLength, or with a NUL or invalid UTF-8, which PostgreSQL's text
// (and jsonb) refuse.
func checkText(v string) error {
	switch {
	case len(v) > maxIDLength:
		return fmt.Errorf("longer than %d bytes", maxIDLength)
	case strings.IndexByte(v, 0) >= 0:
		return errors.New("holds a NUL character")
	case !utf8.ValidString(v):
		return errors.New("is not valid UTF-8")
	}
	return nil
}

// longestChargeID stands for whichever charge an event's ids find: the
// posting-set keys of a refund derive from its charge's id, which can be
// as long as charges.MaxIDLength.
var longestChargeID = strings.Repeat("x", charges.MaxIDLength)

// checkSetKeys refuses a refund whose posting sets' idempotency keys,
// which name its PSP refund id in full so that the journal reads plainly,
// would be longer than postings.MaxKeyLength for some charge.
func checkSetKeys(ev scheme.Event) error {
	if ev.RefundID == "" {
		return nil
	}
	for _, k := range postings.RefundKeys(longestChargeID, ev.RefundID) {
		if len(k) > postings.MaxKeyLength {
			return fmt.Errorf("%w: refund id of %d bytes: the posting-set keys derived from it would exceed %d bytes (refund ids of up to %d bytes fit)",
				scheme.ErrMalformed, len(ev.RefundID), postings.MaxKeyLength, len(ev.RefundID)-(len(k)-postings.MaxKeyLength))
		}
	}
	return nil
}

// checkTimes refuses events dated outside the ledger's window (before its
// go-live date, past our clock plus periods.MaxAhead — the scheme's 300 s
// tolerance plus 5 minutes — or at a UTC offset no zone has), so the
// delivery is kept as malformed (400) at intake, for every scheme alike,
// instead of being booked in a month nobody can close or failing in the
// database ten times. The ledger refuses the same times again when it
// books; the window is its calendar's.
func checkTimes(evs []scheme.Event, cal periods.Calendar, now time.Time) error {
	for _, ev := range evs {
		if ev.OccurredAt.IsZero() {
			continue // the scheme carries no time: the delivery's receipt dates it
		}
		if err := cal.CheckEventTime(ev.OccurredAt, now); err != nil {
			return fmt.Errorf("%w: %s: %w", scheme.ErrMalformed, ev.Type, err)
		}
	}
	return nil
}

// checkAmounts refuses events stating an amount or fee above the ledger's
// limit: authentic but malformed (400, kept, a divergence), never a
// delivery that fails on every retry or, worse, a sum no report can add.
func checkAmounts(evs []scheme.Event, limit money.Limit) error {
	for _, ev := range evs {
		if ev.HasAmount {
			if err := limit.Check("amount", ev.Amount); err != nil {
				return fmt.Errorf("%w: %w", scheme.ErrMalformed, err)
			}
		}
		if ev.HasFee {
			if err := limit.Check("fee", ev.Fee); err != nil {
				return fmt.Errorf("%w: %w", scheme.ErrMalformed, err)
			}
		}
	}
	return nil
}
