package inbox

// Status is where an inbox row stands. The list is the database's
// ck_inbox_status constraint, word for word (a test compares them).
type Status string

// The inbox statuses.
const (
	// StatusPending: due at next_attempt_at, for a worker to claim.
	StatusPending Status = "pending"
	// StatusProcessed: applied (or a redelivery that changed nothing).
	StatusProcessed Status = "processed"
	// StatusParked: a refund before its payment, released when the payment lands.
	StatusParked Status = "parked"
	// StatusDivergent: a divergence for finance; never retried unless it gave up.
	StatusDivergent Status = "divergent"
	// StatusIgnored: an event no charge reacts to, stored for audit.
	StatusIgnored Status = "ignored"
)

// Statuses lists every inbox status.
var Statuses = []Status{StatusPending, StatusProcessed, StatusParked, StatusDivergent, StatusIgnored}
