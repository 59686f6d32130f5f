package reconcile

// StopAfterPage makes runs end right after the page numbered n (from 1)
// is kept, as a crash there would: the run stays running, its pages kept.
func (r *Reconciler) StopAfterPage(n int) { r.stopAfterPage = func(p int) bool { return p == n } }

// StopAfterFileKept makes file runs end right after their file is kept,
// as a crash there would: the run stays running, no line loaded.
func (r *Reconciler) StopAfterFileKept() { r.stopAfterFileKept = true }

// ErrStopped is the error of a run StopAfterPage or StopAfterFileKept ended.
var ErrStopped = errStopped
