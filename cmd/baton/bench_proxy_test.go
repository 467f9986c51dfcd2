package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe strings.Builder.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The benchmark's bare proxy passes the benchmark upstream's answers through
// unchanged, plain and streamed, call after call on kept-alive connections.
func TestBenchProxyPassesAnswersThrough(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: gwUpstream(0)}
	go up.Serve(ln)
	defer up.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- benchProxy(ctx, []string{"--addr", "127.0.0.1:0", "--upstream", "http://" + ln.Addr().String()}, &out)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("bench-proxy: %v", err)
		}
	}()
	addrRE := regexp.MustCompile(`serving on (\S+)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatal("bench-proxy did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	target := newGWTarget("http://"+addr, gwModel, "k")
	for i := range 400 {
		stream := i%2 == 1
		r, err := target.call(context.Background(), client, stream, true)
		if err != nil {
			t.Fatalf("call %d (stream %v): %v", i, stream, err)
		}
		if r.text != gwAnswer || !r.usage {
			t.Fatalf("call %d (stream %v): %q, usage %v; want %q with usage", i, stream, r.text, r.usage, gwAnswer)
		}
	}
}

// procCPU reads this process's CPU time, which grows while it computes.
func TestProcCPUGrowsWithWork(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	before := procCPU(os.Getpid())
	x := uint64(1)
	for start := time.Now(); procCPU(os.Getpid())-before < 50*time.Millisecond; {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("CPU time stayed at %v while computing for 20s (x=%d)", procCPU(os.Getpid()), x)
		}
		for range 100000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if procCPU(-1) != 0 {
		t.Fatal("a process that does not exist has CPU time")
	}
}
