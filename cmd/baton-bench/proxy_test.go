package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"
)

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
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "--addr", "127.0.0.1:0", "--upstream", "http://" + ln.Addr().String()}, w, w)
		w.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("bench-proxy: %v", err)
		}
	}()
	// The first line it prints names its address.
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`serving on (\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("bench-proxy did not start: %q, %v", line, err)
	}
	addr := m[1]

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

// procSyscalls counts this process's reads and writes as it makes them.
func TestProcSyscallsCountReadsAndWrites(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/<pid>/io on this system")
	}
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := procSyscalls(os.Getpid())
	for range 10 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadAt(make([]byte, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	after := procSyscalls(os.Getpid())
	if after[0]-before[0] < 10 || after[1]-before[1] < 10 {
		t.Fatalf("10 reads and 10 writes counted as %d and %d", after[0]-before[0], after[1]-before[1])
	}
	if procSyscalls(-1) != [2]int64{} {
		t.Fatal("a process that does not exist has system calls")
	}
}
