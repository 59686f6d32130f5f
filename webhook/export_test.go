package webhook

// MaxBatch is the most deliveries one group commit, or one processing
// transaction, holds.
const MaxBatch = maxBatch

// Batching reports whether RunBatcher has started its batch loops.
func (in *Inbox) Batching() bool { return in.group.Started() }

// ClaimDueSQL is the workers' claim statement, for its plan's test.
const ClaimDueSQL = claimDueSQL

// LargeSlotsTaken is how many large unauthenticated bodies hold a slot of
// the gate, for tests that must know a slot is taken before going on.
func (h *Handler) LargeSlotsTaken() int { return len(h.large.slots) }
