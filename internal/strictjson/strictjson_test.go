package strictjson_test

import (
	"errors"
	"testing"

	"github.com/razao/razao/internal/strictjson"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"a":1,"b":[1,{"a":2}]}`, nil},
		{`[1,2]`, nil},
		{`{"a":1,"a":2}`, strictjson.ErrDuplicateKey},
		{`{"x":{"a":1,"a":2}}`, strictjson.ErrDuplicateKey},
		{`{"a":1} {"b":2}`, strictjson.ErrTrailingData},
		{"{\"a\":\"\xff\"}", strictjson.ErrInvalidUTF8},
		{`{"a":`, strictjson.ErrSyntax},
		{``, strictjson.ErrSyntax},
		{`{"a":"x\u0000y"}`, strictjson.ErrNUL},
		{`{"a\u0000":1}`, strictjson.ErrNUL},
	} {
		if err := strictjson.Check([]byte(tc.in)); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Check(%q) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(`{"a":1,"a":2}`)
	f.Add(`[{"a":[{}]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		strictjson.Check([]byte(s)) // must not panic
	})
}
