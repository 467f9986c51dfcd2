package http

import (
	"net/http"

	"github.com/batonhq/baton/gateway"
)

// capabilities is the directory of what Baton can do: the task types of
// /v1/generate with their schemas and template versions, and the
// coordination capabilities. It executes nothing.
func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	types := make([]map[string]any, 0)
	for _, t := range s.tasks.All() {
		types = append(types, map[string]any{
			"type": t.Name, "description": t.Description, "inputSchema": t.Input, "outputSchema": t.Output,
			"templateVersions": t.Versions, "defaultTemplateVersion": t.Latest, "maxOutputTokens": t.MaxTokens,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "capabilities",
		"notice": "This is a directory, not an execution endpoint: nothing here runs a task. Generate with POST /v1/generate; Baton plans, records and verifies, external executors act.",
		"generation": map[string]any{
			"endpoint": "POST /v1/generate", "taskTypes": types,
			"options": map[string]any{
				"maxAttempts":     map[string]any{"default": defaultMaxAttempts, "min": 1, "max": maxMaxAttempts},
				"llm.mode":        gateway.Modes,
				"llm.model":       "a <provider>:<model> id from GET /v1/models",
				"llm.maxCostUsd":  map[string]any{"exclusiveMin": 0, "max": maxCostUSDLimit},
				"templateVersion": "one of the type's templateVersions; the highest by default",
			},
			"idempotency": map[string]any{"header": "Idempotency-Key", "maxLength": maxIdemKey, "retention": s.ledger.Idempotency.Retention().String()},
		},
		"coordination": []map[string]any{
			{"name": "agent_plans", "endpoint": "POST /v1/agent-plans", "description": "a plan for an external executor, generated through the agent_plan task, with the approval and proof policy its risk level implies"},
			{"name": "handoff_preview", "endpoint": "POST /v1/handoff/preview", "description": "the package an executor would receive; nothing stored"},
			{"name": "handoff_contracts", "endpoint": "POST /v1/handoff/contracts", "description": "a stored contract with approval policy, proof policy, callbacks and a hash-chained ledger"},
			{"name": "context_preview", "endpoint": "POST /v1/context/preview", "description": "a normalised, deduplicated, token-budgeted, redacted context packet for generate and agent plans"},
			{"name": "executor_protocol", "endpoint": "GET /v1/executor-protocol", "description": "the callback protocol executors implement"},
		},
	})
}
