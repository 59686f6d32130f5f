// Package inbox is razao's delivery engine: it stores each authentic
// delivery once, and applies it to the charge and the ledger by one path,
// whatever brought it there (the webhook front, package webhook, or
// reconciliation reading a PSP's statement, package reconcile).
//
// The inbox is the queue. Memory only dispatches: nothing answered lives
// anywhere but in the inbox, so a crash, a shutdown or a dead replica
// loses nothing. One delivery, and where each step lives:
//
//	PSP ──HTTP──▶ webhook.Handler: flood gate, mTLS, Authenticate, parse (webhook/scheme)
//	                │ Inbox.Check (inbox.go; judgeEach, process.go): a refusal is kept
//	                │ by Inbox.StoreMalformed (400), the rest goes to Inbox.Store
//	                ▼
//	  Inbox.Store (inbox.go) ──▶ group commit (internal/batch): one INSERT, one COMMIT
//	  (reconcile: Inbox.StoreVerified,          │  rows pending, due now (sql.go: insertSQL)
//	   statement.go) ──────────────────────────┤  conflicting redeliveries kept (conflicts.go)
//	                                            │  redeliveries made due / requeued (redeliverSQL)
//	                                            │  answer 2xx only after the commit
//	                                            ▼
//	              doorbell (worker.go): in-process ring, NOTIFY to other replicas
//	                                            ▼
//	  Worker claim loop (worker.go; N per replica, every replica), one
//	  transaction (Processor.processTx, process.go):
//	    claim  SELECT … WHERE status='pending' AND next_attempt_at<=now()
//	           ORDER BY next_attempt_at LIMIT 64 FOR UPDATE SKIP LOCKED (sql.go: claimDueSQL),
//	           with the last closed month read under the close lock (lastClosedColumn)
//	    lock   charges in id order, SKIP LOCKED (held ones: snoozed) (charges.Applier.LockTx,
//	           charges/apply.go; its statements in charges/store.go)
//	    decide in memory, delivery after delivery (charges.Locked.Apply, the pure
//	           charges.Decide in charges/decide.go)
//	    write  posting sets dated by that month (periods.Competence) and charges+grants
//	           (charges.Locked.WriteTx, which posts with postings.Ledger.PostAllLockedTx),
//	           divergences (divergences.OpenForDeliveries),
//	           outbox, inbox statuses + snoozes + released refunds (sql.go: finishSQL):
//	           a few statements
//	    COMMIT ──▶ ring again if the claim was full, a refund was released
//	               or a snooze is over; a failed batch: each delivery alone,
//	               its failure backs off (attempts), then processing_failed
//	               (recordFailureSQL)
//
// New deliveries, retries after back-off, refunds released from parking,
// deliveries snoozed because another transaction held their charge,
// requeued ones (a PSP's redelivery, razao inbox retry) and those a dead
// replica stored all become due rows of the inbox, and the claim loop is
// the only reader of due rows. A redelivery of an applied payment
// re-ensures its access grant before its answer, in a short transaction of
// its own (Inbox.Store; charges.GrantMissing, then
// charges.Applier.EnsureGrantTx). The inbox's statuses are states.go's.
package inbox
