package sqlstmt_test

import (
	"context"
	"testing"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/internal/sqlstmt"
)

// A statement that fails to prepare is tried again on the next call, and
// once prepared it runs in any transaction on any pooled connection.
func TestPreparedOnceReusedAndRetriedAfterFailure(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	s := sqlstmt.New(db, `SELECT n FROM later WHERE n = ANY($1) ORDER BY n`)

	tx := db.MustBeginTx(ctx, nil)
	if _, err := s.In(ctx, tx); err == nil {
		t.Fatal("prepared a statement over a table that does not exist")
	}
	tx.Rollback()

	db.MustExec(`CREATE TABLE later (n int PRIMARY KEY)`)
	db.MustExec(`INSERT INTO later SELECT generate_series(1, 100)`)
	db.SetMaxOpenConns(3)
	for i := 0; i < 6; i++ {
		tx := db.MustBeginTx(ctx, nil)
		stmt, err := s.In(ctx, tx)
		if err != nil {
			t.Fatalf("call %d after the table exists: %v", i, err)
		}
		var got []int
		if err := stmt.SelectContext(ctx, &got, "{3,1,2}"); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0] != 1 || got[2] != 3 {
			t.Fatalf("got %v", got)
		}
		tx.Rollback()
	}
}
