package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v4"

	"github.com/batonhq/baton/docs"
)

// openAPIJSON is docs/openapi.yaml as JSON, converted on the first request
// for it rather than in every process that links http (the CLI's commands
// too); an error means a broken build, which the tests would catch.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) { return yamlToJSON(docs.OpenAPIYAML) })

// openAPI serves the OpenAPI document: GET /v1/openapi.json, no key.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := openAPIJSON()
	if err != nil {
		s.writeError(w, r, fmt.Errorf("the embedded OpenAPI document does not convert to JSON: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
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
