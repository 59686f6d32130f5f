// Package webhook is razao's front door for PSPs: it authenticates each
// delivery on its raw bytes, stores it once in the inbox, and applies it
// to the charge and the ledger by one path, whatever brought it there.
//
// The inbox is the queue. Memory only dispatches: nothing answered lives
// anywhere but in the inbox, so a crash, a shutdown or a dead replica
// loses nothing.
//
//	PSP ──HTTP──▶ Handler ──Inbox.Store──▶ group commit: one INSERT, one COMMIT
//	                                        │  rows pending, due now
//	  (reconciliation: Inbox.Store) ───────┤  redeliveries made due / requeued
//	                                        │  answer 2xx only after the commit
//	                                        ▼
//	                    doorbell: in-process ring, NOTIFY to other replicas
//	                                        ▼
//	  Worker claim loop (N per replica, every replica), one transaction:
//	    claim  SELECT … WHERE status='pending' AND next_attempt_at<=now()
//	           ORDER BY next_attempt_at LIMIT 64 FOR UPDATE SKIP LOCKED
//	    lock   charges in id order, SKIP LOCKED (held ones: snoozed)
//	    decide in memory, delivery after delivery (charges.Locked.Apply)
//	    write  posting sets, charges+grants, divergences, outbox, inbox
//	           statuses + snoozes + released refunds: a few statements
//	    COMMIT ──▶ ring again if the claim was full, a refund was released
//	               or a snooze is over; a failed batch: each delivery alone,
//	               its failure backs off (attempts), then processing_failed
//
// New deliveries, retries after back-off, refunds released from parking,
// deliveries snoozed because another transaction held their charge,
// requeued ones (a PSP's redelivery, razao inbox retry) and those a dead
// replica stored all become due rows of the inbox, and the claim loop is
// the only reader of due rows. A redelivery of an applied payment
// re-ensures its access grant before its answer, in a short transaction of
// its own (Inbox.Store).
package inbox
