package http_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// inputText is an input message item's first text part.
func inputText(it responses.ResponseItemUnion) string {
	return gjson.Get(it.RawJSON(), "content.0.text").Str
}

// GET /v1/responses/{id}/input_items with the official Go SDK: the items
// the response's request sent, newest first by default, paged with limit
// and after; ids named for items sent without one; another tenant's
// response is a 404.
func TestResponsesInputItems(t *testing.T) {
	e, _, client := responsesEnv(t)
	ctx := context.Background()
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("be brief", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage("first", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("second", responses.EasyInputMessageRoleUser),
	}
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := client.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, it := range page.Data {
		if it.Type != "message" || !strings.HasPrefix(it.ID, "msg_") || gjson.Get(it.RawJSON(), "content.#").Int() != 1 {
			t.Fatalf("item %s", it.RawJSON())
		}
		texts = append(texts, inputText(it))
	}
	if strings.Join(texts, ",") != "second,first,be brief" || page.HasMore {
		t.Fatalf("items %q, has_more %v", texts, page.HasMore)
	}
	// Oldest first, one at a time, after the first.
	page, err = client.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(1)})
	if err != nil || len(page.Data) != 1 || inputText(page.Data[0]) != "be brief" || !page.HasMore {
		t.Fatalf("first page %v: %v", page, err)
	}
	next, err := client.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(1), After: openai.String(page.Data[0].ID)})
	if err != nil || len(next.Data) != 1 || inputText(next.Data[0]) != "first" {
		t.Fatalf("next page %v: %v", next, err)
	}
	if r := e.do("GET", "/v1/responses/"+resp.ID+"/input_items?limit=0", e.tenantA, nil); r.status != 400 || r.str("error.param") != "limit" {
		t.Fatalf("limit 0: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/responses/"+resp.ID+"/input_items", e.tenantB, nil); r.status != 404 {
		t.Fatalf("another tenant's: %d %s", r.status, r.raw)
	}
}

// Two input items sent with one id (OpenAI refuses that; a translated
// call takes it): each id listed is still a cursor, so the SDK's
// auto-pager walks every item once and ends, rather than asking for the
// same page for ever.
func TestResponsesInputItemsDuplicateIDs(t *testing.T) {
	_, _, client := responsesEnv(t)
	ctx := context.Background()
	input := []any{
		map[string]any{"type": "message", "role": "user", "id": "msg_same", "content": []any{map[string]any{"type": "input_text", "text": "one"}}},
		map[string]any{"type": "message", "role": "user", "id": "msg_same", "content": []any{map[string]any{"type": "input_text", "text": "two"}}},
		map[string]any{"type": "message", "role": "user", "content": "three"},
	}
	var resp responses.Response
	if err := client.Post(ctx, "/responses", map[string]any{"model": "rec:m1", "input": input}, &resp); err != nil {
		t.Fatal(err)
	}
	var texts, ids []string
	iter := client.Responses.InputItems.ListAutoPaging(ctx, resp.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(1)})
	for iter.Next() && len(texts) < 10 {
		texts, ids = append(texts, inputText(iter.Current())), append(ids, iter.Current().ID)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(texts, ",") != "one,two,three" || ids[0] != "msg_same" || ids[1] == ids[0] {
		t.Fatalf("items %q, ids %q", texts, ids)
	}
}
