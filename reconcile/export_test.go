package reconcile

// StopAfterPage makes runs end right after the page numbered n (from 1)
// is kept, as a crash there would: the run stays running, its pages kept.
func (r *Reconciler) StopAfterPage(n int) { r.stopAfterPage = func(p int) bool { return p == n } }

// ErrStopped is the error of a run StopAfterPage ended.
var ErrStopped = errStopped
