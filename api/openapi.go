package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"gopkg.in/yaml.v3"
)

// OpenAPIYAML is the OpenAPI 3.1 document of razao's whole HTTP API as
// written, the one source of the contract: tests validate it with a
// library, validate every response the API and end-to-end tests receive
// against it, and hold its routes and scopes against the router's.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// OpenAPI is the same document as JSON, in the YAML's key order, as
// /openapi.json serves it.
var OpenAPI = mustJSON(OpenAPIYAML)

func mustJSON(doc []byte) []byte {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		panic(fmt.Sprintf("api: openapi.yaml: %v", err))
	}
	var b bytes.Buffer
	if err := yamlToJSON(&b, &root); err != nil {
		panic(fmt.Sprintf("api: openapi.yaml: %v", err))
	}
	return b.Bytes()
}

// yamlToJSON writes the YAML node n as JSON, keeping the order of mapping
// keys (a map would sort them).
func yamlToJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		return yamlToJSON(b, n.Content[0])
	case yaml.AliasNode:
		return yamlToJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := yamlToJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := yamlToJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			v, err := strconv.ParseBool(n.Value)
			if err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int", "!!float":
			if !json.Valid([]byte(n.Value)) {
				return fmt.Errorf("line %d: %q is not a JSON number", n.Line, n.Value)
			}
			b.WriteString(n.Value)
		default:
			s, _ := json.Marshal(n.Value)
			b.Write(s)
		}
	default:
		return fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	return nil
}

// OpenAPIHandler serves the document at /openapi.json.
func OpenAPIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(OpenAPI)
	})
}
