package reconcile

import (
	"context"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// TestNextPageSeesAMoveAnywhereInThePass: a pass is read again when any
// of its pages, not only the first or the last, stated another total or
// page count than its last page.
func TestNextPageSeesAMoveAnywhereInThePass(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r := &Reconciler{db: db}
	type page struct {
		pass, page, count int
		total             int64
	}
	steady := func(pass, n int) []page {
		var ps []page
		for i := range n {
			ps = append(ps, page{pass, i, n, int64(10 * n)})
		}
		return ps
	}
	moved := func(ps []page, i int, total int64, count int) []page {
		ps[i].total, ps[i].count = total, count
		return ps
	}
	for i, tt := range []struct {
		name  string
		pages []page
		want  position
	}{
		{"nothing kept", nil, position{}},
		{"midway", steady(0, 3)[:2], position{page: 2}},
		{"a steady pass", steady(0, 3), position{done: true}},
		{"a middle page of another total", moved(steady(0, 3), 1, 31, 3), position{pass: 1}},
		{"a middle page of another page count", moved(steady(0, 3), 1, 30, 4), position{pass: 1}},
		{"the first page of another total", moved(steady(0, 3), 0, 29, 3), position{pass: 1}},
		{"a moved pass after a steady one", append(steady(0, 3), moved(steady(1, 3), 1, 31, 3)...), position{pass: 2}},
		{"the last pass moved", moved(steady(maxPasses-1, 3), 1, 31, 3), position{done: true}},
	} {
		run := int64(i + 1)
		db.MustExec(`INSERT INTO reconciliation_runs (id, endpoint, source, window_from, window_to, final, scheduled, claimed_by, lease_until)
			VALUES ($1, 'bcb', 'bcb-pix', now() - interval '2 hours', now() - interval '1 hour', false, false, 'test', now())`, run)
		for _, p := range tt.pages {
			db.MustExec(`INSERT INTO reconciliation_pages (run_id, pass, page, total, items, page_count, page_size, bytes, sha256)
				VALUES ($1, $2, $3, $4, 10, $5, 10, 0, sha256(''))`, run, p.pass, p.page, p.total, p.count)
		}
		got, err := r.nextPage(context.Background(), run)
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}
