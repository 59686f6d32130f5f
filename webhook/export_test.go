package webhook

// SetFreshQueue resizes the queue of deliveries committed and answered but
// not yet taken by an applier. Call it before RunBatcher.
func (in *Inbox) SetFreshQueue(n int) { in.fresh = make(chan int64, n) }

// MaxBatch is the most deliveries one group commit, or one processing
// transaction, holds.
const MaxBatch = maxBatch

// Batching reports whether RunBatcher has started its batch loops.
func (in *Inbox) Batching() bool { return in.group.Started() }
