package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"go.yaml.in/yaml/v4"

	"github.com/batonhq/baton/docs"
)

// openAPIJSON is docs/openapi.yaml as JSON, converted once when the
// program starts; openAPIErr is why it could not be (a broken build: the
// tests load the document).
var openAPIJSON, openAPIErr = yamlToJSON(docs.OpenAPIYAML)

// openAPI serves the OpenAPI document: GET /v1/openapi.json, no key.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	if openAPIErr != nil {
		s.writeError(w, r, fmt.Errorf("the embedded OpenAPI document does not convert to JSON: %w", openAPIErr))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIJSON)
}

// yamlToJSON converts a YAML document to JSON, keeping the order of its
// keys (openapi, info, paths... as written).
func yamlToJSON(doc []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeNodeJSON(&b, &root); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeNodeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("openapi: line %d: want one document", n.Line)
		}
		return writeNodeJSON(b, n.Content[0])
	case yaml.AliasNode:
		return writeNodeJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return fmt.Errorf("openapi: line %d: keys must be plain scalars", k.Line)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONValue(b, k.Value); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeNodeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeNodeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("openapi: line %d: %w", n.Line, err)
		}
		return writeJSONValue(b, v)
	}
	return fmt.Errorf("openapi: line %d: unexpected YAML node", n.Line)
}

func writeJSONValue(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}
