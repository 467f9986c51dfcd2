package http

import (
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// opsRecorder records the writes and flushes a stream makes, in order.
type opsRecorder struct {
	*httptest.ResponseRecorder
	mu      sync.Mutex
	ops     []string
	flushed chan struct{}
}

func newOpsRecorder() *opsRecorder {
	return &opsRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{}, 8)}
}

func (o *opsRecorder) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.ops = append(o.ops, "write")
	o.mu.Unlock()
	return o.ResponseRecorder.Write(p)
}

func (o *opsRecorder) Flush() {
	o.mu.Lock()
	o.ops = append(o.ops, "flush")
	o.mu.Unlock()
	o.ResponseRecorder.Flush()
	o.flushed <- struct{}{}
}

func (o *opsRecorder) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ops)
}

// newRecordedSSE starts an event stream on an opsRecorder.
func newRecordedSSE(t *testing.T) (*opsRecorder, *sseWriter) {
	t.Helper()
	w := newOpsRecorder()
	s, err := startSSE(w)
	if err != nil {
		t.Fatal(err)
	}
	return w, s
}

func TestHeldHeadersLeaveWithTheFirstEvent(t *testing.T) {
	w, s := newRecordedSSE(t)
	s.holdHeaders(time.Hour)
	timer := s.hold.timer
	s.flush() // about to wait for the upstream: nothing but headers to send
	if got := w.got(); len(got) != 0 {
		t.Fatalf("the held headers left on their own: %v", got)
	}
	if err := s.data("[DONE]"); err != nil {
		t.Fatal(err)
	}
	s.flush()
	if got := w.got(); !slices.Equal(got, []string{"write", "flush"}) {
		t.Fatalf("ops %v, want the first event written and flushed with the headers", got)
	}
	s.unbound()
	if timer.Stop() {
		t.Fatal("the hold's timer is still armed after its first flush and unbound")
	}
}

func TestHeldHeadersLeaveOnTheirOwnAfterTheWait(t *testing.T) {
	w, s := newRecordedSSE(t)
	s.holdHeaders(time.Millisecond)
	s.flush()
	select {
	case <-w.flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("the held headers never left")
	}
	if err := s.data("[DONE]"); err != nil {
		t.Fatal(err)
	}
	s.flush()
	s.unbound()
	// A loaded machine may run the 1 ms timer before the first s.flush(),
	// which then flushes nothing more (an empty flush): either way the
	// headers left alone, before the event.
	if got := w.got(); !slices.Equal(got, []string{"flush", "write", "flush"}) && !slices.Equal(got, []string{"flush", "flush", "write", "flush"}) {
		t.Fatalf("ops %v", got)
	}
}

func TestUnboundEndsTheHold(t *testing.T) {
	w, s := newRecordedSSE(t)
	s.holdHeaders(time.Hour)
	timer := s.hold.timer
	s.unbound() // the handler returns: net/http sends the headers with the body's end
	if timer.Stop() {
		t.Fatal("the hold's timer is still armed after unbound")
	}
	if got := w.got(); len(got) != 0 {
		t.Fatalf("ops %v", got)
	}
}

// Streams without a hold (the ledger's event feed) flush their headers at
// once, as before.
func TestUnheldHeadersLeaveAtTheFirstFlush(t *testing.T) {
	w, s := newRecordedSSE(t)
	s.flush()
	if got := w.got(); !slices.Equal(got, []string{"flush"}) {
		t.Fatalf("ops %v", got)
	}
}
