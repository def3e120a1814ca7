package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// row is one line of the values table.
type row struct {
	key, typ, def, desc string
}

// schemaNode is the part of a JSON schema the table reads.
type schemaNode struct {
	Type       any                    `json:"type"`
	Enum       []any                  `json:"enum"`
	AnyOf      []*schemaNode          `json:"anyOf"`
	Const      any                    `json:"const"`
	Properties map[string]*schemaNode `json:"properties"`
}

// valuesTable makes the Markdown table of every documented value: a key
// whose head comment has a line starting with `# --` is a row (its
// description from that line on), with the default as JSON and the type
// from the schema; a mapping without one is a section whose keys are
// listed. It fails on a value without a description, a row the schema does
// not know, and a schema property values.yaml does not have.
func valuesTable(values, schemaJSON []byte) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return "", fmt.Errorf("values.yaml: %w", err)
	}
	var schema schemaNode
	if err := json.Unmarshal(schemaJSON, &schema); err != nil {
		return "", fmt.Errorf("values.schema.json: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", errors.New("values.yaml: not a mapping")
	}
	rows, errs := walk("", doc.Content[0], &schema)
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.key] = true
	}
	errs = append(errs, unlisted("", &schema, seen)...)
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", r.key, r.typ, cell(r.def), cell(r.desc))
	}
	return b.String(), nil
}

// walk lists the rows of a mapping at prefix.
func walk(prefix string, m *yaml.Node, schema *schemaNode) ([]row, []error) {
	var rows []row
	var errs []error
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := strings.TrimPrefix(prefix+"."+k.Value, ".")
		sub := property(schema, k.Value)
		desc, ok := description(k.HeadComment)
		switch {
		case ok:
			r, err := makeRow(key, v, desc, sub)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rows = append(rows, r)
		case v.Kind == yaml.MappingNode && len(v.Content) > 0:
			if sub == nil {
				errs = append(errs, fmt.Errorf("%s: not in values.schema.json", key))
				continue
			}
			r, e := walk(key, v, sub)
			rows, errs = append(rows, r...), append(errs, e...)
		default:
			errs = append(errs, fmt.Errorf("%s: no description (a `# --` comment above it)", key))
		}
	}
	return rows, errs
}

// makeRow makes the row of a documented key.
func makeRow(key string, v *yaml.Node, desc string, schema *schemaNode) (row, error) {
	if schema == nil {
		return row{}, fmt.Errorf("%s: not in values.schema.json", key)
	}
	var val any
	if err := v.Decode(&val); err != nil {
		return row{}, fmt.Errorf("%s: %w", key, err)
	}
	def, err := json.Marshal(val)
	if err != nil {
		return row{}, fmt.Errorf("%s: %w", key, err)
	}
	return row{key: key, typ: typeOf(schema), def: string(def), desc: desc}, nil
}

func property(s *schemaNode, name string) *schemaNode {
	if s == nil || s.Properties == nil {
		return nil
	}
	return s.Properties[name]
}

// unlisted reports schema properties that are neither a row, nor inside
// one, nor a section holding rows: values the schema allows but
// values.yaml does not document.
func unlisted(prefix string, s *schemaNode, rows map[string]bool) []error {
	var errs []error
	for _, name := range sortedKeys(s.Properties) {
		key := strings.TrimPrefix(prefix+"."+name, ".")
		if key == "global" || rows[key] {
			continue
		}
		if !hasPrefix(rows, key+".") {
			errs = append(errs, fmt.Errorf("%s: in values.schema.json but not in values.yaml", key))
			continue
		}
		errs = append(errs, unlisted(key, s.Properties[name], rows)...)
	}
	return errs
}

func hasPrefix(rows map[string]bool, p string) bool {
	for k := range rows {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]*schemaNode) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// description returns the text of a head comment from its `# --` line on.
func description(comment string) (string, bool) {
	lines := strings.Split(comment, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "# --") })
	if i < 0 {
		return "", false
	}
	var words []string
	for j, l := range lines[i:] {
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		if j == 0 {
			l = strings.TrimPrefix(l, " --")
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " "), true
}

// typeOf names a schema's type: its enum's values, its types joined.
func typeOf(s *schemaNode) string {
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			b, _ := json.Marshal(e)
			vals[i] = "`" + strings.Trim(string(b), `"`) + "`"
		}
		return strings.Join(vals, ", ")
	}
	if len(s.AnyOf) > 0 {
		var types []string
		for _, a := range s.AnyOf {
			if a.Const == nil {
				types = append(types, typeOf(a))
			}
		}
		return strings.Join(types, " or ")
	}
	switch t := s.Type.(type) {
	case string:
		return typeName(t)
	case []any:
		names := make([]string, len(t))
		for i, x := range t {
			names[i] = typeName(fmt.Sprint(x))
		}
		return strings.Join(names, " or ")
	}
	return "any"
}

func typeName(t string) string {
	switch t {
	case "array":
		return "list"
	case "boolean":
		return "bool"
	}
	return t
}

// cell escapes a table cell's pipes.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
