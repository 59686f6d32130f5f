package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// nulPath names the first field of a JSON body (keys in order, then
// array elements) whose string, or key, holds U+0000: "legs[0].account",
// "reason". strictjson refuses such a body before it is decoded
// (PostgreSQL's text cannot hold the character); this lets the refusal
// name the field. "" when none is found.
func nulPath(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return ""
	}
	return findNUL(v, "")
}

func findNUL(v any, path string) string {
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			return cmp.Or(path, "the body")
		}
	case []any:
		for i, e := range v {
			if p := findNUL(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.ContainsRune(k, 0) {
				return fmt.Sprintf("%.64q", p)
			}
			if p := findNUL(v[k], p); p != "" {
				return p
			}
		}
	}
	return ""
}
