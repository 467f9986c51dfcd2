package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/batonhq/baton/cmd/internal/profile"
	"github.com/batonhq/baton/gateway"
)

// benchProxy (baton-bench proxy) serves a bare forwarding proxy in front
// of one upstream, with the HTTP client Baton's adapters use, flushing every
// read. What it adds over calling the upstream directly is the floor any Go
// HTTP proxy pays here, the baseline of the gateway benchmark
// (docs/benchmarks.md).
func benchProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("baton-bench proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	upstream := fs.String("upstream", "", "upstream base URL")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the proxy to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := profile.StartCPU(*cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	u, err := url.Parse(*upstream)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("bench-proxy: --upstream %q is not an absolute URL", *upstream)
	}
	base := strings.TrimRight(u.String(), "/")
	client := gateway.NewHTTPClient()
	forward := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, h := range []string{"Content-Type", "Authorization", "Accept"} {
			if v := r.Header.Get(h); v != "" {
				out.Header.Set(h, v)
			}
		}
		resp, err := client.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for _, h := range []string{"Content-Type", "Content-Length", "Cache-Control"} {
			if v := resp.Header.Get(h); v != "" {
				w.Header().Set(h, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		f, _ := w.(http.Flusher)
		buf := make([]byte, 4<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				if f != nil {
					f.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(forward), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "bench-proxy serving on %s\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startBareProxy runs `baton-bench proxy` (this binary) in front of
// upstream and waits until it serves.
func startBareProxy(dir, upstream string) (*gwChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startChild(self, dir, "bench-proxy.log", 15*time.Second, func(addr string) []string {
		args := []string{"proxy", "--addr", addr, "--upstream", upstream}
		if proxyCPUProfile != "" {
			args = append(args, "--cpuprofile", proxyCPUProfile)
		}
		return args
	}, func(log []byte) bool { return bytes.Contains(log, []byte("bench-proxy serving")) })
}
