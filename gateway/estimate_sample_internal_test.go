package gateway

import (
	"math"
	"strings"
	"testing"
)

// An estimate of a text longer than its sample counts the first MiB and
// takes the rest at that rate: a tail written differently is not read.
func TestCountOr4SamplesALongText(t *testing.T) {
	head := strings.Repeat("quick brown fox ", estimateSample/16) // exactly the sample
	tail := strings.Repeat("z", 2*estimateSample)                 // far fewer tokens a byte than the head
	n, _, ok := countUpTo(head, math.MaxInt, CountTokens)         // a piece at a time, as estimates count
	if !ok {
		t.Skip("no tokenizer")
	}
	want := int(float64(n) * float64(len(head)+len(tail)) / float64(len(head)))
	if got := countOr4(head + tail); got != want {
		t.Fatalf("estimate %d, want %d (the first MiB's rate over the whole)", got, want)
	}
	if got := countOr4(head); got != n {
		t.Fatalf("a text within the sample: %d, want its count %d", got, n)
	}
}
