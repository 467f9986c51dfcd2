// Package openai is the provider kinds openai and openai-compatible, and
// OpenAI's wire formats, written once for the adapter and the fronts:
//
//   - chat completions: the adapter (Provider, New) that translates the
//     gateway's request, and its passthrough (Forward); as a front, the
//     request (ChatRequest, converted by ToGateway) and the answers
//     (ChatCompletion, ChatChunk). Each shape is one type for both: the
//     adapter sends a ChatRequest and decodes the answers into
//     ChatCompletion and ChatChunk, with one tool call type (ChatToolCall),
//     finish_reason map (ChatStop, ChatFinishReason) and tool_choice
//     vocabulary;
//   - the Responses API (POST /v1/responses): forwarded as it is to OpenAI,
//     and as a front decoded into the gateway's request so that any
//     provider can answer it; its response object and stream event
//     grammar, and the stored responses that previous_response_id
//     continues.
//
// Names carry their API's prefix (Chat..., Responses...).
package openai
