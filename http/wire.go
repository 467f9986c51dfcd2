package http

// The answers the gateway writes on every call, as structs: encoding a
// struct is several times cheaper than encoding the same map, and these go
// out once per call or once per streamed delta. Rare events (tool-call
// starts, errors) are still built as maps where they are written.

// anTextDeltaOut is Anthropic's content_block_delta carrying text.
type anTextDeltaOut struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

func anTextDelta(index int, text string) anTextDeltaOut {
	d := anTextDeltaOut{Type: "content_block_delta", Index: index}
	d.Delta.Type, d.Delta.Text = "text_delta", text
	return d
}

// Events with nothing variable in them, encoded once.
var (
	anPing        = []byte(`{"type":"ping"}`)
	anMessageStop = []byte(`{"type":"message_stop"}`)
)
