package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/partners"
	"github.com/razao/razao/postings"
)

// payoutForm is the partner page's payout form: a fresh idempotency key
// per showing (so a double submit, or a reload of the answer, books
// once), the date prefilled with today, and the answer of the last
// submission (from the redirect's query).
type payoutForm struct {
	Key, Today string
	// Booked is the posting set a submission booked; Replayed says it
	// had been booked before (a second submit of the same form).
	Booked   int64
	Replayed bool
	Amount   string
}

// newPayoutForm is the form the partner page shows, with the outcome of
// the submission that redirected to it, if any.
func (c *Console) newPayoutForm(r *http.Request) payoutForm {
	q := r.URL.Query()
	f := payoutForm{Key: newSecret(), Today: c.Now().In(c.loc()).Format(dateLayout)}
	if id, err := strconv.ParseInt(q.Get("repasse"), 10, 64); err == nil && id > 0 {
		f.Booked, f.Replayed = id, q.Get("repetido") == "1"
		if n, err := strconv.ParseInt(q.Get("valor"), 10, 64); err == nil && n > 0 {
			f.Amount = brl(n)
		}
	}
	return f
}

// payout books a payout to the partner (admin) with partners.Payout, the
// function POST /v1/partners/{id}/payouts calls, keyed by the form's
// idempotency key: the same form sent twice books once.
func (c *Console) payout(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if r.PostForm.Get("key") == "" {
		c.fail(w, r, http.StatusBadRequest, "Formulário sem a sua chave de repasse: recarregue a página e envie de novo.")
		return
	}
	amount, err := parseBRL(r.PostForm.Get("valor"))
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	now := c.Now()
	at, err := c.payoutTime(r.PostForm.Get("data"), now)
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	res, err := partners.Payout(r.Context(), c.DB, c.Ledger, partners.PayoutRequest{
		Partner: id, IdempotencyKey: r.PostForm.Get("key"), Amount: amount,
		AllowOverOwed: r.PostForm.Get("adiantamento") == "1", At: at, Now: now,
	})
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	q := url.Values{"repasse": {strconv.FormatInt(res.PostingSet, 10)}, "valor": {strconv.FormatInt(res.Amount, 10)}}
	if res.Replayed {
		q.Set("repetido", "1")
	}
	http.Redirect(w, r, Prefix+"/partners/"+url.PathEscape(id)+"?"+q.Encode()+"#payout", http.StatusSeeOther)
}

// payoutTime is when a payout dated day (dd/mm/aaaa, São Paulo) was
// made: now when it is today, else noon of that day. A date after today
// is refused: a payout is booked once made.
func (c *Console) payoutTime(day string, now time.Time) (time.Time, error) {
	d, err := c.parseDay("data", day)
	if err != nil {
		return time.Time{}, err
	}
	today := now.In(c.loc())
	switch y, m, dd := today.Date(); {
	case d.Year() == y && d.Month() == m && d.Day() == dd:
		return now, nil
	case d.After(today):
		return time.Time{}, formRefusal(http.StatusBadRequest, "A data do repasse não pode ser futura: um repasse é lançado depois de feito.")
	}
	return d.Add(12 * time.Hour), nil
}

// payoutRefusals are the payout's refusals in Portuguese.
var payoutRefusals = []actRefusal{
	{partners.ErrOverOwed, http.StatusConflict, "O valor passa do que se deve ao parceiro. Marque “adiantamento” para pagar mesmo assim."},
	{partners.ErrNotFound, http.StatusNotFound, "Parceiro desconhecido: nada lhe foi devido ainda (marque “adiantamento” para adiantar)."},
	{partners.ErrBusy, http.StatusServiceUnavailable, "As contas do parceiro estão mudando agora: tente de novo."},
	{partners.ErrInvalid, http.StatusBadRequest, "Repasse inválido: confira o valor (acima do limite?) e a data."},
	{postings.ErrIdempotencyConflict, http.StatusConflict, "Este formulário já lançou um repasse de outro valor: recarregue a página para um novo repasse."},
}
