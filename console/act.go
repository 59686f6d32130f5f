package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/internal/problem"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The forms that act on the books (payouts.go, adjustments.go,
// divergences' bookings, reconciliation.go) share what is here: amounts
// and dates as Brazilians write them, and their refusals in Portuguese,
// never a 500 for what a person typed.

// dateLayout is how the forms write and read a date: 31/08/2026. A text
// field rather than <input type=date>, whose text is the browser's
// locale's, not Portuguese.
const dateLayout = "02/01/2006"

// formError is a refusal of what a form holds: its status (4xx) and the
// message the page shows.
type formError struct {
	status int
	msg    string
}

func (e *formError) Error() string { return e.msg }

func formRefusal(status int, msg string) error { return &formError{status: status, msg: msg} }

// actRefusal is a domain error said in Portuguese, with its status.
type actRefusal struct {
	err    error
	status int
	msg    string
}

// ledgerRefusals are what any of the forms may meet in the ledger.
var ledgerRefusals = []actRefusal{
	{postings.ErrClosedMonth, http.StatusConflict, "O mês de competência está fechado: escolha uma data de um mês aberto."},
	{periods.ErrOutsideWindow, http.StatusBadRequest, "Data fora da janela do razão (antes da entrada em operação ou no futuro)."},
	{money.ErrAboveMax, http.StatusBadRequest, "Valor acima do máximo configurado."},
}

// refuse answers err as an error page: a refusal (refusalOf) with its
// status and Portuguese message, anything else as failWith does (the
// console's refusals, else a 500, logged).
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if status, msg, ok := refusalOf(err); ok {
		if status >= 500 {
			c.Log.WarnContext(r.Context(), "console form not done", "path", r.URL.Path, "reason", err)
		}
		c.fail(w, r, status, msg)
		return
	}
	c.failWith(w, r, err)
}

// refusalOf is the status and message of err when it is a refusal: a
// formError, an error of the act tables or the console's, or an error of a known kind
// below 500 (a general message); ok is false for anything else.
func refusalOf(err error) (int, string, bool) {
	var fe *formError
	if errors.As(err, &fe) {
		return fe.status, fe.msg, true
	}
	for _, table := range [][]actRefusal{adjustmentRefusals, payoutRefusals, bookingRefusals, uploadRefusals, ledgerRefusals} {
		for _, f := range table {
			if errors.Is(err, f.err) {
				return f.status, f.msg, true
			}
		}
	}
	for _, f := range refusals { // the console's own (pages.go)
		if errors.Is(err, f.err) {
			status := f.status
			if status == 0 {
				status = problem.StatusOf(f.err)
			}
			return status, f.msg, true
		}
	}
	if _, ok := kind.Of(err); ok {
		if status := problem.StatusOf(err); status < 500 {
			return status, "Pedido recusado pelo razão: confira os dados do formulário e tente de novo.", true
		}
	}
	return 0, "", false
}

// loc is the ledger's time zone (São Paulo by default).
func (c *Console) loc() *time.Location { return c.Ledger.Calendar().Location() }

// parseBRL reads an amount as a person writes it in Brazil: "49,90",
// "1.234,56", "R$ 8,98", "100". Cents follow a comma; dots group
// thousands. It is positive, at most two decimals, and fits the ledger.
func parseBRL(s string) (int64, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "R$"))
	if s == "" {
		return 0, formRefusal(http.StatusBadRequest, "Informe o valor em reais, como 49,90.")
	}
	if len(s) > 32 {
		return 0, formRefusal(http.StatusBadRequest, "Valor longo demais.")
	}
	whole, cents, hasCents := strings.Cut(s, ",")
	if strings.Contains(cents, ",") || strings.Contains(cents, ".") {
		return 0, formRefusal(http.StatusBadRequest, fmt.Sprintf("Valor %q inválido: use vírgula para os centavos, como 49,90.", s))
	}
	groups := strings.Split(whole, ".")
	for i, g := range groups {
		if i > 0 && len(g) != 3 {
			return 0, formRefusal(http.StatusBadRequest, fmt.Sprintf("Valor %q inválido: use vírgula para os centavos (49,90) e ponto só para milhares (1.234,56).", s))
		}
	}
	plain := strings.Join(groups, "")
	if hasCents {
		plain += "." + cents
	}
	n, err := money.ParseReais(plain)
	if err != nil {
		return 0, formRefusal(http.StatusBadRequest, fmt.Sprintf("Valor %q inválido: um valor positivo em reais, com até dois decimais, como 49,90.", s))
	}
	return n, nil
}

// isoDay writes a YYYY-MM-DD date as dd/mm/aaaa; anything else as it is.
func isoDay(s string) string {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return s
	}
	return d.Format(dateLayout)
}

// parseDay reads a date written dd/mm/aaaa as that day's midnight in the
// ledger's zone; field names it in the refusal.
func (c *Console) parseDay(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseInLocation(dateLayout, s, c.loc())
	if err != nil {
		if utf8.RuneCountInString(s) > 20 {
			s = "…"
		}
		return time.Time{}, formRefusal(http.StatusBadRequest, fmt.Sprintf("Campo %s: %q não é uma data dd/mm/aaaa.", field, s))
	}
	return d, nil
}

// afterParam is a page's ?after= cursor, the last id of the page before
// (0 without one); false when it is not a whole number from 0 on.
func afterParam(q url.Values) (int64, bool) {
	v := q.Get("after")
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}
