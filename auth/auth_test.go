package auth_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/pgtest"
)

func mustCreate(t *testing.T, db *sqlx.DB, name string, scopes ...auth.Scope) (string, auth.Token) {
	t.Helper()
	plain, tok, err := auth.Create(context.Background(), db, name, scopes)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return plain, tok
}

func count(t *testing.T, db *sqlx.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestCreateStoresOnlyTheDigestAndAuthenticates(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	plain, tok, err := auth.Create(ctx, db, "finance dashboard", []auth.Scope{auth.Write, auth.Read, auth.Write})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain, "rz_") || len(plain) != 46 {
		t.Fatalf("plaintext %q: want rz_ and 43 base64url characters", plain)
	}
	if tok.ID == 0 || tok.Name != "finance dashboard" || tok.CreatedAt.IsZero() || tok.RevokedAt != nil {
		t.Fatalf("token = %+v", tok)
	}
	if got := tok.Scopes; len(got) != 2 || got[0] != auth.Read || got[1] != auth.Write {
		t.Fatalf("scopes = %v, want [read write] deduplicated in ladder order", got)
	}

	var stored []byte
	if err := db.Get(&stored, `SELECT token_hash FROM api_tokens WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte(plain))
	if string(stored) != string(want[:]) {
		t.Fatalf("stored %x, want sha256 of the plaintext %x", stored, want)
	}
	if n := count(t, db, `SELECT count(*) FROM api_tokens t WHERE strpos(t::text, $1) > 0`, plain[3:]); n != 0 {
		t.Fatal("the plaintext is stored")
	}

	got, err := auth.Authenticate(ctx, db, plain)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != tok.ID || got.Name != tok.Name || len(got.Scopes) != 2 || !got.CreatedAt.Equal(tok.CreatedAt) {
		t.Fatalf("authenticated %+v, created %+v", got, tok)
	}

	other, _ := mustCreate(t, db, "second", auth.Read)
	if other == plain {
		t.Fatal("two tokens share a plaintext")
	}
}

func TestScopesFormALadder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		granted            []auth.Scope
		read, write, admin bool
	}{
		{[]auth.Scope{auth.Read}, true, false, false},
		{[]auth.Scope{auth.Write}, true, true, false},
		{[]auth.Scope{auth.Admin}, true, true, true},
		{[]auth.Scope{auth.Read, auth.Admin}, true, true, true},
	}
	for _, tc := range tests {
		tok := auth.Token{Scopes: tc.granted}
		got := [3]bool{tok.Has(auth.Read), tok.Has(auth.Write), tok.Has(auth.Admin)}
		if got != [3]bool{tc.read, tc.write, tc.admin} {
			t.Errorf("%v: has read/write/admin = %v, want %v", tc.granted, got, [3]bool{tc.read, tc.write, tc.admin})
		}
		if tok.Has("root") {
			t.Errorf("%v: has an unknown scope", tc.granted)
		}
	}
	now := (auth.Token{}).CreatedAt
	revoked := auth.Token{Scopes: []auth.Scope{auth.Admin}, RevokedAt: &now}
	if revoked.Has(auth.Read) {
		t.Error("a revoked token grants read")
	}
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	got, err := auth.ParseScopes(" Write,read,write")
	if err != nil || len(got) != 2 || got[0] != auth.Read || got[1] != auth.Write {
		t.Fatalf("ParseScopes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "read,", "superuser", "read,root"} {
		if _, err := auth.ParseScopes(bad); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("ParseScopes(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestCreateRefusesBadNamesAndScopes(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tests := []struct {
		name   string
		scopes []auth.Scope
	}{
		{"", []auth.Scope{auth.Read}},
		{strings.Repeat("n", 101), []auth.Scope{auth.Read}},
		{"tab\tname", []auth.Scope{auth.Read}},
		{"bad \xff utf-8", []auth.Scope{auth.Read}},
		{"no scopes", nil},
		{"unknown scope", []auth.Scope{"root"}},
		{"empty scope", []auth.Scope{auth.Read, ""}},
	}
	for _, tc := range tests {
		if _, _, err := auth.Create(context.Background(), db, tc.name, tc.scopes); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("Create(%q, %v) = %v, want ErrInvalid", tc.name, tc.scopes, err)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM api_tokens`); n != 0 {
		t.Fatalf("%d tokens written, want 0", n)
	}
}

func TestAuthenticateRefusesBadBearers(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	live, _ := mustCreate(t, db, "live", auth.Admin)
	revoked, rt := mustCreate(t, db, "revoked", auth.Admin)
	if _, err := auth.Revoke(ctx, db, rt.ID); err != nil {
		t.Fatal(err)
	}
	// Change one character of the secret, and the last one (whose two low
	// bits are unused: Strict decoding refuses them set, or the bytes
	// differ).
	swap := func(i int) string {
		b := []byte(live)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	for name, bearer := range map[string]string{
		"empty":               "",
		"prefix only":         "rz_",
		"wrong prefix":        "xx_" + live[3:],
		"no prefix":           live[3:],
		"upper-case prefix":   "RZ_" + live[3:],
		"garbage":             "not-a-token",
		"bad base64":          "rz_" + strings.Repeat("*", 43),
		"padded base64":       live + "=",
		"too long":            live + "A",
		"too short":           live[:45],
		"trailing space":      live + " ",
		"all-zero secret":     "rz_" + strings.Repeat("A", 43),
		"one character off":   swap(10),
		"last character off":  swap(45),
		"revoked":             revoked,
		"header, not a token": "Bearer " + live,
	} {
		if tok, err := auth.Authenticate(ctx, db, bearer); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("%s: Authenticate = %+v, %v; want ErrUnauthenticated", name, tok, err)
		}
	}
	if _, err := auth.Authenticate(ctx, db, live); err != nil {
		t.Fatalf("live token: %v", err)
	}
}

func TestRevokeIsImmediateOneWayAndIdempotent(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	plain, tok := mustCreate(t, db, "ci", auth.Write)
	keep, kept := mustCreate(t, db, "kept", auth.Read)

	r, err := auth.Revoke(ctx, db, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.RevokedAt == nil || r.RevokedAt.Before(r.CreatedAt) {
		t.Fatalf("revoked = %+v", r)
	}
	if _, err := auth.Authenticate(ctx, db, plain); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("revoked token authenticates: %v", err)
	}
	again, err := auth.Revoke(ctx, db, tok.ID)
	if err != nil || again.RevokedAt == nil || !again.RevokedAt.Equal(*r.RevokedAt) {
		t.Fatalf("second revoke = %+v, %v; want the first revocation unchanged", again, err)
	}
	if _, err := auth.Revoke(ctx, db, 999999); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("revoke unknown id: %v, want ErrNotFound", err)
	}
	if _, err := auth.Authenticate(ctx, db, keep); err != nil {
		t.Fatalf("other token: %v", err)
	}

	list, err := auth.List(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != tok.ID || !list[0].Revoked() || list[1].ID != kept.ID || list[1].Revoked() {
		t.Fatalf("list = %+v", list)
	}
	if got, err := auth.Get(ctx, db, kept.ID); err != nil || got.Name != "kept" {
		t.Fatalf("get = %+v, %v", got, err)
	}
}

// The table keeps every token ever issued: only revocation may change a
// row, whoever connects.
func TestDatabaseAllowsOnlyRevocation(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	_, tok := mustCreate(t, db, "ops", auth.Read)
	_, gone := mustCreate(t, db, "gone", auth.Read)
	if _, err := auth.Revoke(context.Background(), db, gone.ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ stmt, constraint string }{
		{`UPDATE api_tokens SET scopes = '{admin}' WHERE id = $1`, "trg_api_tokens_revoke_only"},
		{`UPDATE api_tokens SET scopes = '{admin}', revoked_at = now() WHERE id = $1`, "trg_api_tokens_revoke_only"},
		{`UPDATE api_tokens SET token_hash = sha256('x') WHERE id = $1`, "trg_api_tokens_revoke_only"},
		{`UPDATE api_tokens SET name = 'renamed' WHERE id = $1`, "trg_api_tokens_revoke_only"},
		{`UPDATE api_tokens SET revoked_at = NULL WHERE id <> $1`, "trg_api_tokens_revoke_only"},
		{`UPDATE api_tokens SET revoked_at = now() + interval '1 day' WHERE id <> $1`, "trg_api_tokens_revoke_only"},
		{`DELETE FROM api_tokens WHERE id = $1`, "trg_api_tokens_revoke_only"},
		{`TRUNCATE api_tokens`, "trg_api_tokens_no_truncate"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) VALUES ('x', sha256('a'), '{root}')`, "ck_api_tokens_scopes"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) VALUES ('x', sha256('a'), '{}')`, "ck_api_tokens_scopes"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) VALUES ('x', sha256('a'), '{read,NULL}')`, "ck_api_tokens_scopes"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) VALUES ('x', sha256('a'), '{{read},{write}}')`, "ck_api_tokens_scopes"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) VALUES ('x', 'short', '{read}')`, "ck_api_tokens_hash"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) VALUES (E'new\nline', sha256('a'), '{read}')`, "ck_api_tokens_name"},
		{`INSERT INTO api_tokens (name, token_hash, scopes) SELECT 'x', token_hash, '{read}' FROM api_tokens WHERE id = $1`, "uq_api_tokens_hash"},
	} {
		var args []any
		if strings.Contains(tc.stmt, "$1") {
			args = append(args, tok.ID)
		}
		_, err := db.Exec(tc.stmt, args...)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Constraint != tc.constraint {
			t.Errorf("%s: got %v, want refusal by %s", tc.stmt, err, tc.constraint)
		}
	}
	// Not even a session that turns ordinary triggers off.
	tx := db.MustBegin()
	tx.MustExec(`SET LOCAL session_replication_role = replica`)
	if _, err := tx.Exec(`DELETE FROM api_tokens`); err == nil {
		t.Error("DELETE under session_replication_role = replica succeeded")
	}
	tx.Rollback()
	if n := count(t, db, `SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL`); n != 1 {
		t.Fatalf("%d live tokens, want 1", n)
	}
}
