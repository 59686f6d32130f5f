package api

import (
	"net/http"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/cursor"
)

// chartScope is the cursor scope of the chart's pages.
const chartScope = "accounts"

// ChartPage is one page of the chart of accounts.
type ChartPage struct {
	Accounts []accounts.ChartEntry `json:"accounts"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// chart lists the chart of accounts in id order, a page at a time (the
// journal's paging): the standard chart first, then partners' accounts as
// they were created.
func (a *API) chart(w http.ResponseWriter, r *http.Request) {
	after, err := cursor.Decode(r.URL.Query().Get("cursor"), chartScope)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	size, err := limit(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	rows, more, err := accounts.Chart(r.Context(), a.reads(r), after, size)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page := ChartPage{Accounts: rows}
	if more {
		page.NextCursor = cursor.Encode(chartScope, rows[len(rows)-1].ID)
	}
	writeJSON(w, http.StatusOK, page)
}
