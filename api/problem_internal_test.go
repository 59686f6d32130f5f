package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/internal/problem"
	"github.com/razao/razao/money"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// TestEveryDomainErrorAnswersItsProblem pins the status and problem type of
// every domain error the API answers, wrapped as the domain wraps it: the
// kinds declared beside each error and the one map in internal/problem
// must keep answering what the API answered when it switched on each.
func TestEveryDomainErrorAnswersItsProblem(t *testing.T) {
	t.Parallel()
	above := &money.AboveMaxError{Field: "amount", Amount: 2, Max: 1}
	tests := []struct {
		err        error
		status     int
		slug       string
		retryAfter string
	}{
		{fmt.Errorf("%w: %w", partners.ErrInvalid, above), 400, "amount-above-max", ""},
		{fmt.Errorf("%w: %w", charges.ErrInvalid, above), 400, "amount-above-max", ""},
		{fmt.Errorf("%w: %w", postings.ErrSumOverflow, errors.New("numeric out of range")), 422, "sum-overflow", ""},
		{partners.ErrInvalid, 400, "invalid-payout", ""},
		// A payout outside the window is an invalid payout, as ErrInvalid alone above.
		{fmt.Errorf("%w: %w", partners.ErrInvalid, periods.ErrOutsideWindow), 400, "invalid-payout", ""},
		{partners.ErrNotFound, 404, "not-found", ""},
		{partners.ErrOverOwed, 422, "over-owed", ""},
		{fmt.Errorf("set: %w", periods.ErrOutsideWindow), 400, "outside-window", ""},
		{postings.ErrIdempotencyConflict, 422, "idempotency-conflict", ""},
		{fmt.Errorf("post: %w", postings.ErrClosedMonth), 409, "closed-month", ""},
		{periods.ErrInvalidMonth, 400, "invalid-parameter", ""},
		{reports.ErrInvalidRange, 400, "invalid-parameter", ""},
		{reports.ErrInvalidCursor, 400, "invalid-parameter", ""},
		{divergences.ErrInvalidStatus, 400, "invalid-parameter", ""},
		{divergences.ErrInvalidNote, 400, "invalid-parameter", ""},
		{reports.ErrUnknownKind, 404, "unknown-export", ""},
		{reports.ErrUnknownDialect, 404, "unknown-export", ""},
		{fmt.Errorf("series: %w", accounts.ErrUnknownAccount), 404, "not-found", ""},
		{divergences.ErrNotFound, 404, "not-found", ""},
		{divergences.ErrAlreadyResolved, 409, "already-resolved", ""},
		{divergences.ErrNotRequeueable, 409, "not-requeueable", ""},
		{fmt.Errorf("close: %w", periods.ErrMonthNotOver), 409, "month-not-over", ""},
		{periods.ErrEarlierMonthOpen, 409, "earlier-month-open", ""},
		{periods.ErrCloseBusy, 503, "close-busy", "5"},
		{periods.ErrAlreadyClosed, 409, "already-closed", ""},
		{fmt.Errorf("close 2020-10: %w: before the go-live month", periods.ErrInvalidMonth), 400, "invalid-parameter", ""},
		{charges.ErrInvalid, 400, "invalid-charge", ""},
		{charges.ErrConflict, 409, "charge-conflict", ""},
		{charges.ErrNotFound, 404, "not-found", ""},
		{errors.New("connection reset"), 500, "internal", ""},
		{postings.ErrInvalid, 500, "internal", ""}, // never reached the API as itself: no kind
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range tests {
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest(http.MethodGet, "/", nil), log, tt.err)
		var p problem.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatalf("%v: %v", tt.err, err)
		}
		if w.Code != tt.status || p.Status != tt.status || p.Type != problem.Base+tt.slug || w.Header().Get("Retry-After") != tt.retryAfter {
			t.Errorf("%v: %d %+v Retry-After %q; want %d %s %q", tt.err, w.Code, p, w.Header().Get("Retry-After"), tt.status, tt.slug, tt.retryAfter)
		}
		if tt.status != 500 && p.Detail != tt.err.Error() {
			t.Errorf("%v: detail %q", tt.err, p.Detail)
		}
	}
}
