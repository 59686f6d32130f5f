package charges

import "testing"

// TestPaymentRefPrefixIsThePaymentRefsOwn: a statement's id of a payment
// after PaymentRefPrefix is the PaymentRef the webhook stored, in every
// scheme: the PSP's reference, or the event's id where the scheme names
// no payments.
func TestPaymentRefPrefixIsThePaymentRefsOwn(t *testing.T) {
	for _, tt := range []struct{ scheme, id, want string }{
		{"hodle", "trk-1", SchemePaymentRef("hodle", "trk-1")},
		{"bcb-pix", "E1", SchemePaymentRef("bcb-pix", "E1")},
		{"abacatepay", "ch_1", SchemePaymentRef("abacatepay", "ch_1")},
		{"standard", "msg_1", EventPaymentRef("standard", "msg_1")},
	} {
		if got := PaymentRefPrefix(tt.scheme) + tt.id; got != tt.want {
			t.Errorf("%s: %q, want %q", tt.scheme, got, tt.want)
		}
	}
	if got := EventPaymentRef("standard", "msg_1"); got != "standard:event:msg_1" {
		t.Errorf("EventPaymentRef: %q", got)
	}
	if got := SchemePaymentRef("hodle", "trk-1"); got != "hodle:trk-1" {
		t.Errorf("SchemePaymentRef: %q", got)
	}
}
