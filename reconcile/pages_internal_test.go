package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/reconcile/bcbpix"
)

// TestNextPageSeesAMoveAnywhereInThePass: a pass is read again when any
// of its pages, not only the first or the last, stated another total or
// page count than its last page, or when its pages, agreeing, do not add
// up to their total; a statement that moved during every pass allowed
// is an error, never read as done.
func TestNextPageSeesAMoveAnywhereInThePass(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r := &Reconciler{db: db}
	type page struct {
		pass, page, count, items, size int
		total                          int64
	}
	steady := func(pass, n int) []page {
		var ps []page
		for i := range n {
			ps = append(ps, page{pass, i, n, 10, 10, int64(10 * n)})
		}
		return ps
	}
	moved := func(ps []page, i int, total int64, count int) []page {
		ps[i].total, ps[i].count = total, count
		return ps
	}
	edit := func(ps []page, i int, change func(*page)) []page {
		change(&ps[i])
		return ps
	}
	for i, tt := range []struct {
		name    string
		pages   []page
		want    position
		wantErr bool
	}{
		{name: "nothing kept", want: position{}},
		{name: "midway", pages: steady(0, 3)[:2], want: position{page: 2}},
		{name: "a steady pass", pages: steady(0, 3), want: position{done: true}},
		{name: "an empty statement of no page", pages: []page{{0, 0, 0, 0, 10, 0}}, want: position{done: true}},
		{name: "an empty statement of one page", pages: []page{{0, 0, 1, 0, 10, 0}}, want: position{done: true}},
		{name: "a middle page of another total", pages: moved(steady(0, 3), 1, 31, 3), want: position{pass: 1}},
		{name: "a middle page of another page count", pages: moved(steady(0, 3), 1, 30, 4), want: position{pass: 1}},
		{name: "the first page of another total", pages: moved(steady(0, 3), 0, 29, 3), want: position{pass: 1}},
		{name: "a moved pass after a steady one", pages: append(steady(0, 3), moved(steady(1, 3), 1, 31, 3)...), want: position{pass: 2}},
		{name: "a steady pass short of its total", pages: edit(steady(0, 3), 2, func(p *page) { p.items = 9 }), want: position{pass: 1}},
		{name: "a steady pass of two page sizes", pages: edit(steady(0, 3), 1, func(p *page) { p.size = 9 }), want: position{pass: 1}},
		{name: "the last pass moved", pages: moved(steady(maxPasses-1, 3), 1, 31, 3), wantErr: true},
		{name: "the last pass short of its total", pages: edit(steady(maxPasses-1, 3), 0, func(p *page) { p.items = 0 }), wantErr: true},
	} {
		run := int64(i + 1)
		db.MustExec(`INSERT INTO reconciliation_runs (id, endpoint, source, window_from, window_to, final, scheduled, claimed_by, lease_until)
			VALUES ($1, 'bcb', 'bcb-pix', now() - interval '2 hours', now() - interval '1 hour', false, false, 'test', now())`, run)
		for _, p := range tt.pages {
			db.MustExec(`INSERT INTO reconciliation_pages (run_id, pass, page, total, items, page_count, page_size, bytes, sha256)
				VALUES ($1, $2, $3, $4, $5, $6, $7, 0, sha256(''))`, run, p.pass, p.page, p.total, p.items, p.count, p.size)
		}
		got, err := r.nextPage(context.Background(), run, maxPasses)
		switch {
		case tt.wantErr && !errors.Is(err, bcbpix.ErrPaging):
			t.Errorf("%s: %+v, %v; want an error of paging", tt.name, got, err)
		case !tt.wantErr && (err != nil || got != tt.want):
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}
