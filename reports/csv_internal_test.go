package reports

import (
	"bytes"
	"math"
	"testing"
)

func TestCSVWriterQuotesAndDefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Dialect
		in   string
		want string
	}{
		{"plain", RFC4180, "abc", "abc"},
		{"empty", RFC4180, "", ""},
		{"comma", RFC4180, "a,b", `"a,b"`},
		{"semicolon quoted in rfc4180 too", RFC4180, "a;=b", `"a;=b"`},
		{"quote", RFC4180, `say "hi"`, `"say ""hi"""`},
		{"newline", RFC4180, "a\nb", "\"a\nb\""},
		{"carriage return", RFC4180, "a\rb", "\"a\rb\""},
		{"formula defused in rfc4180", RFC4180, "=1+1", "'=1+1"},
		{"hyperlink defused and quoted in rfc4180", RFC4180, `=HYPERLINK("http://x","y")`, `"'=HYPERLINK(""http://x"",""y"")"`},
		{"plus in rfc4180", RFC4180, "+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
		{"minus in rfc4180", RFC4180, "-2+3", "'-2+3"},
		{"at in rfc4180", RFC4180, "@SUM(1+1)", "'@SUM(1+1)"},
		{"tab in rfc4180", RFC4180, "\t=1", "\"'\t=1\""},
		{"carriage return in rfc4180", RFC4180, "\r=1", "\"'\r=1\""},
		{"carriage return in br", Brazil, "\r=1", "\"'\r=1\""},
		{"formula inside is left alone", RFC4180, "a=1", "a=1"},
		{"semicolon", Brazil, "a;b", `"a;b"`},
		{"comma quoted in br too", Brazil, "a,=b", `"a,=b"`},
		{"formula", Brazil, "=1+1", "'=1+1"},
		{"plus", Brazil, "+55 11", "'+55 11"},
		{"minus", Brazil, "-3", "'-3"},
		{"at", Brazil, "@SUM(A1)", "'@SUM(A1)"},
		{"tab", Brazil, "\tx", "\"'\tx\""},
		{"tab inside", Brazil, "a\t+b", "\"a\t+b\""},
		{"defused and quoted", Brazil, "=A1;B1", `"'=A1;B1"`},
		{"utf-8 untouched", Brazil, "à vista", "à vista"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			c := NewCSVWriter(&b, tt.d)
			c.Text(tt.in)
			c.EndLine()
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want+"\r\n" {
				t.Errorf("got %q, want %q", got, tt.want+"\r\n")
			}
		})
	}
}

func TestCSVWriterNumbers(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	c := NewCSVWriter(&b, Brazil)
	c.Reais(-5)
	c.Reais(math.MinInt64)
	c.Int(-5)
	c.Time(1_788_000_000_123_400)
	c.Time(0)
	c.EndLine()
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	// Brasília time, with its offset.
	want := "-0,05;-92233720368547758,08;-5;2026-08-29T07:40:00.1234-03:00;1969-12-31T21:00:00-03:00\r\n"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	b.Reset()
	c = NewCSVWriter(&b, RFC4180)
	c.Time(1_788_000_000_123_400)
	c.Time(0)
	c.EndLine()
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "2026-08-29T10:40:00.1234Z,1970-01-01T00:00:00Z\r\n"; got != want {
		t.Errorf("rfc4180: got %q, want %q", got, want)
	}
}
