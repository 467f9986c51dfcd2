package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serveFor runs `baton serve` in this process with args on a fresh data
// directory until the test ends, and returns its address and the admin key
// it printed.
func serveFor(t *testing.T, args ...string) (addr, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, args...), &out, &out)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := reServing.FindStringSubmatch(out.String()); m != nil {
			k := reBootKey.FindStringSubmatch(out.String())
			if k == nil {
				t.Fatalf("no key printed: %s", out.String())
			}
			return m[1], k[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start: %s", out.String())
	return "", ""
}

func getMetrics(t *testing.T, addr, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /metrics takes an admin key unless --metrics-public (or
// BATON_METRICS_PUBLIC) is given; the store's appends are timed and both
// read models' lag is served.
func TestServeMetricsFlag(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		addr, key := serveFor(t)
		if status, _ := getMetrics(t, addr, ""); status != 401 {
			t.Fatalf("no key: %d", status)
		}
		status, body := getMetrics(t, addr, key)
		if status != 200 {
			t.Fatalf("admin key: %d %s", status, body)
		}
		// The bootstrap key was appended through the timed store.
		if m := regexp.MustCompile(`(?m)^baton_store_append_duration_seconds_count (\d+)$`).FindStringSubmatch(body); m == nil || m[1] == "0" {
			t.Errorf("no append timed:\n%s", grepLines(body, "baton_store_append"))
		}
		for _, rm := range []string{"projections", "gateway"} {
			if !regexp.MustCompile(`(?m)^baton_read_model_lag\{read_model="` + rm + `"\} \d+$`).MatchString(body) {
				t.Errorf("no lag of %s:\n%s", rm, grepLines(body, "baton_read_model_lag"))
			}
		}
	})
	t.Run("flag", func(t *testing.T) {
		addr, _ := serveFor(t, "--metrics-public")
		if status, body := getMetrics(t, addr, ""); status != 200 || !strings.Contains(body, "baton_handoffs{") {
			t.Fatalf("no key: %d %.200s", status, body)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("BATON_METRICS_PUBLIC", "true")
		addr, _ := serveFor(t)
		if status, _ := getMetrics(t, addr, ""); status != 200 {
			t.Fatalf("no key: %d", status)
		}
	})
}

func grepLines(s, prefix string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
