package http

import (
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"gzip, deflate, br"}, true},
		{[]string{"br", "gzip;q=0.1"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;q=abc"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false}, // named wins over the wildcard
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"identity"}, false},
		{[]string{"gzipped"}, false},
	} {
		if got := acceptsGzip(c.values); got != c.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", c.values, got, c.want)
		}
	}
}

// Accept-Encoding is a client's header: no value panics, and gzip is
// taken only where the header names it or "*".
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0, *", "*;q=0.5", "br;q=1, x-gzip;q=0.2", ";;,=q", "gzip;q=NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if acceptsGzip([]string{v}) {
			l := strings.ToLower(v)
			if !strings.Contains(l, "gzip") && !strings.Contains(l, "*") {
				t.Fatalf("%q taken as gzip", v)
			}
		}
	})
}
