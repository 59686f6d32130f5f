package webhook

// LargeSlotsTaken is how many large unauthenticated bodies hold a slot of
// the gate, for tests that must know a slot is taken before going on.
func (h *Handler) LargeSlotsTaken() int { return len(h.large.slots) }
