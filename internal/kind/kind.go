// Package kind is razao's one application error type: a domain error says
// what kind of refusal it is (not found, conflict, invalid, ...) and the
// stable problem slug clients switch on, where it is defined. The HTTP
// edge (internal/problem.WriteError) maps kinds to statuses once; no
// domain package knows HTTP.
package kind

import "time"

// Kind is what sort of refusal an error is.
type Kind int

// The kinds. The zero Kind is no kind: an unexpected failure.
const (
	_ Kind = iota
	// Invalid: the request is malformed or out of bounds.
	Invalid
	// NotFound: what the request names does not exist.
	NotFound
	// Conflict: the request contradicts the ledger's state (a closed
	// month, a resolved divergence, an id registered otherwise).
	Conflict
	// Refused: well-formed and consistent, but a rule refuses it (a
	// payout above what is owed, a figure beyond int64).
	Refused
	// Forbidden: the caller may not do this.
	Forbidden
	// Unavailable: nothing changed; try again later.
	Unavailable
)

// Error is a domain error of a kind. Declare each as a package-level
// sentinel with New and wrap it with fmt.Errorf("...: %w", ErrX): errors.Is
// still matches it, and Of finds its kind.
type Error struct {
	Kind Kind
	// Slug is the problem type clients switch on ("closed-month"), Title
	// its human name.
	Slug, Title string
	// RetryAfter, for Unavailable errors, says when to try again.
	RetryAfter time.Duration
	// Precise errors (an amount above the maximum) name a problem better
	// than any error that wraps them: Of prefers them.
	Precise bool
	msg     string
}

// New returns an error of kind k with its problem slug and title; msg is
// its Error text.
func New(k Kind, slug, title, msg string) *Error {
	return &Error{Kind: k, Slug: slug, Title: title, msg: msg}
}

// Precisely marks e precise (see Error.Precise) and returns it; call it
// where e is declared.
func (e *Error) Precisely() *Error {
	e.Precise = true
	return e
}

// After sets e's RetryAfter and returns it; call it where e is declared.
func (e *Error) After(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// Error returns the message New was given.
func (e *Error) Error() string { return e.msg }

// Of returns the kinded error err is or wraps: the first precise one in
// the wrapping tree (depth first, in wrapping order), else the outermost.
// ok is false for an error of no kind.
func Of(err error) (e *Error, ok bool) {
	var first, precise *Error
	walk(err, func(k *Error) bool {
		if first == nil {
			first = k
		}
		if k.Precise {
			precise = k
			return false
		}
		return true
	})
	if precise != nil {
		return precise, true
	}
	return first, first != nil
}

// walk visits every *Error in err's tree in order until visit says stop.
func walk(err error, visit func(*Error) bool) bool {
	if err == nil {
		return true
	}
	if k, ok := err.(*Error); ok && !visit(k) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !walk(e, visit) {
				return false
			}
		}
	}
	return true
}
