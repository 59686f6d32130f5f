package razao_test

import (
	"testing"

	"github.com/lib/pq"

	"github.com/razao/razao"
)

// TestDriverURLReadsEveryHostOfAMultiHostURL: lib/pq's own URL parser
// takes "db1:5432,db2:5433" for one host name and both ports for 5432;
// DriverURL hands it every host with its own port, the database, the
// user, the password (quotes and backslashes kept) and
// target_session_attrs.
func TestDriverURLReadsEveryHostOfAMultiHostURL(t *testing.T) {
	t.Parallel()
	raw := `postgres://razao:p%27w%5C@127.0.0.1:5432,db2:5433,db3/ledger?target_session_attrs=read-write&sslmode=disable`
	cfg, err := pq.NewConfig(razao.DriverURL(raw))
	if err != nil {
		t.Fatal(err)
	}
	type hp struct {
		host string
		port uint16
	}
	got := []hp{{cfg.Host, cfg.Port}}
	for _, m := range cfg.Multi {
		got = append(got, hp{m.Host, m.Port})
	}
	want := []hp{{"127.0.0.1", 5432}, {"db2", 5433}, {"db3", 5432}}
	if len(got) != len(want) {
		t.Fatalf("hosts %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("host %d: %v, want %v", i, got[i], want[i])
		}
	}
	if cfg.Database != "ledger" || cfg.User != "razao" || cfg.Password != `p'w\` ||
		cfg.TargetSessionAttrs != pq.TargetSessionAttrsReadWrite || !cfg.BinaryParameters {
		t.Errorf("config %+v: want database ledger, user razao, the password, read-write and binary parameters", cfg)
	}
	// One host: the URL as before.
	if one := razao.DriverURL("postgres://u@h:1/d"); one != "postgres://u@h:1/d?binary_parameters=yes" {
		t.Errorf("one host: %q", one)
	}
}
