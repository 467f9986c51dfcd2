// Package openai holds OpenAI's wire formats that Baton's fronts speak:
// the Responses API (POST /v1/responses) as a front, decoded into the
// gateway's request so that any provider can answer it (OpenAI itself gets
// the body as it is, see gateway's passthrough), its response
// object and stream event grammar, and the stored responses that
// previous_response_id continues.
//
// Names carry their API's prefix (Responses...): the package is meant to
// hold OpenAI's other wire formats beside it.
package openai
