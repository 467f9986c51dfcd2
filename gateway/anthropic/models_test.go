package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/anthropic"
)

// pagedModels serves Anthropic's paged model list: pageSize models a page,
// newest first, after_id as the cursor. endless makes every page claim
// has_more with a fresh last_id.
func pagedModels(t *testing.T, total, pageSize int, endless bool) (*httptest.Server, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var cursors []string
	all := make([]string, total)
	for i := range all {
		all[i] = fmt.Sprintf("claude-model-%03d", i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("x-api-key") != "k" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("limit") != "1000" {
			http.Error(w, "limit", http.StatusBadRequest)
			return
		}
		after := r.URL.Query().Get("after_id")
		mu.Lock()
		cursors = append(cursors, after)
		n := len(cursors)
		mu.Unlock()
		type model struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		page := struct {
			Data    []model `json:"data"`
			HasMore bool    `json:"has_more"`
			FirstID string  `json:"first_id,omitempty"`
			LastID  string  `json:"last_id,omitempty"`
		}{Data: []model{}}
		if endless {
			id := "m-" + strconv.Itoa(n)
			page.Data = append(page.Data, model{ID: id, Type: "model"})
			page.HasMore, page.FirstID, page.LastID = true, id, id
		} else {
			start := 0
			if after != "" {
				start = slices.Index(all, after) + 1
				if start == 0 {
					http.Error(w, "unknown cursor", http.StatusBadRequest)
					return
				}
			}
			end := min(start+pageSize, total)
			for _, id := range all[start:end] {
				page.Data = append(page.Data, model{ID: id, Type: "model"})
			}
			if end > start {
				page.FirstID, page.LastID = all[start], all[end-1]
			}
			page.HasMore = end < total
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	return srv, &cursors
}

func TestAnthropicListModelsFollowsPages(t *testing.T) {
	srv, cursors := pagedModels(t, 7, 3, false)
	p := anthropic.New("anthropic", srv.URL, "k", srv.Client())
	got, err := p.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[0] != "claude-model-000" || got[6] != "claude-model-006" {
		t.Fatalf("models = %v, want all 7 in order", got)
	}
	want := []string{"", "claude-model-002", "claude-model-005"}
	if !slices.Equal(*cursors, want) {
		t.Fatalf("after_id cursors = %q, want %q", *cursors, want)
	}
}

func TestAnthropicListModelsOnePage(t *testing.T) {
	srv, cursors := pagedModels(t, 2, 1000, false)
	p := anthropic.New("anthropic", srv.URL, "k", srv.Client())
	got, err := p.ListModels(context.Background())
	if err != nil || len(got) != 2 || len(*cursors) != 1 {
		t.Fatalf("models %v, err %v, %d requests; want 2 models from 1 request", got, err, len(*cursors))
	}
}

func TestAnthropicListModelsBoundsPaging(t *testing.T) {
	srv, cursors := pagedModels(t, 0, 0, true)
	p := anthropic.New("anthropic", srv.URL, "k", srv.Client())
	_, err := p.ListModels(context.Background())
	var ue *gateway.UpstreamError
	if !errors.As(err, &ue) || ue.Status != http.StatusBadGateway {
		t.Fatalf("err = %v, want a 502 upstream error", err)
	}
	if len(*cursors) != 50 {
		t.Fatalf("%d page requests, want the bound of 50", len(*cursors))
	}
}
