package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A redirect to another host gets no key: Go's client keeps x-api-key
// across hosts, so a proxy's redirect (or a mistyped --url) handed the
// executor's key to the host it named.
func TestExecutorKeyIsNotSentToAnotherHost(t *testing.T) {
	const key = "btn_sk_RedirectedKey000000000000000000000000"
	var mu sync.Mutex
	var got []string
	asked := make(chan struct{}, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("x-api-key"))
		mu.Unlock()
		select {
		case asked <- struct{}{}:
		default:
		}
		http.Error(w, "{}", http.StatusUnauthorized)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host of the same machine
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	e := &Executor{Base: srv.URL, Key: key, Config: Config{Executor: "ops-bot"}, State: mustState(t),
		Log: zerolog.Nop(), Backoff: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the executor never reached the other host")
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, k := range got {
		if k != "" {
			t.Fatalf("the other host got the key %q", k)
		}
	}
}

func mustState(t *testing.T) *State {
	s, err := openState(t.TempDir() + "/state.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
