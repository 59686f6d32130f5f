package webhook

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// The audit copy of the headers is a JSON object of the kept headers only:
// a secret header is left out, a NUL (which jsonb refuses) and bytes that
// are not UTF-8 become U+FFFD, quotes and backslashes are escaped, and a
// value is cut at 512 bytes.
func TestAuditHeadersKeepOnlyTheKeptHeadersAsJSON(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Webhook-Id", "a\x00b\"c\\")
	h.Set("X-Webhook-Secret", "whsec_never_kept")
	h.Set("Authorization", "Bearer never_kept")
	h.Set("User-Agent", string([]byte{0xff, 'x'}))
	h.Set("X-Request-Id", strings.Repeat("r", 600))
	raw := auditHeaders(h)
	var got map[string]string
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	want := map[string]string{"Content-Type": "application/json", "Webhook-Id": "a\uFFFDb\"c\\", "User-Agent": "\uFFFDx",
		"X-Request-Id": strings.Repeat("r", 512)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit headers %v, want %v", got, want)
	}
	if string(auditHeaders(http.Header{})) != "{}" {
		t.Fatalf("no kept header: %s, want {}", auditHeaders(http.Header{}))
	}
}
