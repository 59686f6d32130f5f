package partners

// SetAfterTree sets the hook run between reading the partners' accounts
// and their sums.
func SetAfterTree(f func()) { afterTree = f }
