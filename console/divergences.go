package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/razao/razao/divergences"
)

// A divergence that stands for money is resolved by booking one of the
// offers its reason and figures allow (divergences.Describe), each its
// own form; a note alone closes only the others. Both go through the
// functions POST /v1/divergences/{id}/resolve calls.

// offers fills in the bookings each open divergence of rows allows, read
// for the whole page at once.
func (c *Console) offers(ctx context.Context, rows []divergenceRow) error {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	offers, err := divergences.OffersOf(ctx, c.reads(ctx), ids)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Offers = offers[rows[i].ID]
	}
	return nil
}

// bookDivergence resolves divergence id by booking the form's resolution
// (divergences.Book), with its optional note, competence (dd/mm/aaaa)
// and, for a credit_refund, the customer credit it draws from.
func (c *Console) bookDivergence(w http.ResponseWriter, r *http.Request, id int64) {
	f := r.PostForm
	req := divergences.Request{Resolution: divergences.Booking(f.Get("resolution")), Note: strings.TrimSpace(f.Get("note"))}
	if v := strings.TrimSpace(f.Get("competencia")); v != "" {
		d, err := c.parseDay("competência", v)
		if err != nil {
			c.refuse(w, r, err)
			return
		}
		req.Competence = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
	}
	if req.Resolution == divergences.BookCreditRefund {
		credit, err := strconv.ParseInt(strings.TrimSpace(f.Get(divergences.ParamCreditDivergence)), 10, 64)
		if err != nil || credit <= 0 {
			c.fail(w, r, http.StatusBadRequest, "Informe o número da divergência cujo crédito ao cliente este estorno devolve.")
			return
		}
		req.CreditDivergenceID = &credit
	}
	if req.Note == "" {
		// The note is the resolution's audit trail: who resolved it, in
		// the words finance reads.
		s, _ := sessionFrom(r.Context())
		req.Note = fmt.Sprintf("Resolvida no console por %s, lançando %s.", s.token.Name, pt("resolution", string(req.Resolution)))
	}
	if _, err := divergences.Book(r.Context(), c.DB, c.Ledger, id, req, c.Now()); err != nil {
		c.refuse(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/divergences?done="+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

// bookingRefusals are the bookings' refusals in Portuguese.
var bookingRefusals = []actRefusal{
	{divergences.ErrBookingRequired, http.StatusConflict, "Esta divergência movimenta dinheiro: resolva-a lançando uma das opções que ela oferece, não só com uma nota."},
	{divergences.ErrNotOffered, http.StatusConflict, "Esta divergência não oferece esse lançamento: escolha uma das opções mostradas."},
	{divergences.ErrInvalidResolution, http.StatusBadRequest, "Resolução inválida: escolha uma das opções mostradas e, para devolver um crédito, a divergência de onde ele vem."},
	{divergences.ErrCreditExceeded, http.StatusConflict, "O crédito ao cliente indicado não basta (ou não é um crédito ao cliente): confira a divergência de origem."},
	{divergences.ErrInvalidNote, http.StatusBadRequest, "Escreva uma nota de resolução (até 2.000 caracteres)."},
}
