package http

// The answers the gateway writes on every call, as structs: encoding a
// struct is several times cheaper than encoding the same map, and these go
// out once per call or once per streamed delta. Rare events (tool-call
// starts, errors) are still built as maps where they are written.

// Events with nothing variable in them, encoded once.
var (
	anPing        = []byte(`{"type":"ping"}`)
	anMessageStop = []byte(`{"type":"message_stop"}`)
)
