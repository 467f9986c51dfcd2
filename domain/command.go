package domain

// CommandKind names a command's callback: approval, proof, result or review.
func CommandKind(c Command) string { return c.kind() }

// CommandRequest is the request a command came in, for retry detection.
func CommandRequest(c Command) RequestRef { return c.request() }
