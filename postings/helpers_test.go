package postings_test

import (
	"testing"

	"github.com/jmoiron/sqlx"
)

func count(t *testing.T, db *sqlx.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
