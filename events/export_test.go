package events

// Listening is closed once Run's LISTEN has taken effect, so a test that
// pins down the notification path does not commit before anyone listens.
func (h *Hub) Listening() <-chan struct{} { return h.listening }
