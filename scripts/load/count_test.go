package main

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// Events (and bytes) are counted however the stream's bytes are split into reads,
// including a match cut in two by a read's end.
func TestCountEventsAcrossReads(t *testing.T) {
	frame := "id: 12-3\nevent: charge.paid\ndata: {\"event: not a line\"}\n\n: keepalive\n\n"
	stream := strings.Repeat(frame, 1000)
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":        func(r io.Reader) io.Reader { return r },
		"byte by byte": iotest.OneByteReader,
		"half reads":   iotest.HalfReader,
	} {
		var n, received atomic.Int64
		countEvents(wrap(strings.NewReader(stream)), &n, &received)
		if n.Load() != 1000 || received.Load() != int64(len(stream)) {
			t.Errorf("%s: %d events of %d bytes, want 1000 of %d", name, n.Load(), received.Load(), len(stream))
		}
	}
}
