package reconcile

// SetMaxRunBytes bounds what a run may receive over all its pages to n
// bytes instead of maxRunBytes.
func (r *Reconciler) SetMaxRunBytes(n int64) { r.maxRunBytes = n }
