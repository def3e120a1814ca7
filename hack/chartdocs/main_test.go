package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUpToDate: the chart README's values table is what `make chart-docs`
// would write.
func TestUpToDate(t *testing.T) {
	stale, err := run(filepath.Join("..", ".."), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("out of date, run make chart-docs: %v", stale)
	}
}

// TestValuesTable: rows, sections, types and the errors the table catches.
func TestValuesTable(t *testing.T) {
	schema := `{"properties": {
		"a": {"type": "integer"},
		"s": {"properties": {"b": {"enum": ["auto", true, false]}, "c": {"type": ["integer", "string"]}}},
		"m": {"type": "object", "properties": {"x": {"type": "string"}}},
		"d": {"anyOf": [{"const": ""}, {"type": "string"}]}}}`
	values := `# -- An integer.
a: 1
# A section.
s:
  # -- On or off,
  # or auto.
  b: auto
  # -- Pods | percent.
  c: "50%"
# -- A map.
m: {x: y}
# -- A duration.
d: ""
`
	got, err := valuesTable([]byte(values), []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `a` | integer | `1` | An integer. |",
		"| `s.b` | `auto`, `true`, `false` | `\"auto\"` | On or off, or auto. |",
		"| `s.c` | integer or string | `\"50%\"` | Pods \\| percent. |",
		"| `m` | object | `{\"x\":\"y\"}` | A map. |",
		"| `d` | string | `\"\"` | A duration. |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no row %s in\n%s", want, got)
		}
	}
	for _, c := range []struct{ name, values, want string }{
		{"undocumented", "a: 1\n", "a: no description"},
		{"not in the schema", "# -- Z.\nz: 1\n", "z: not in values.schema.json"},
		{"schema only", "# -- An integer.\na: 1\n", "m: in values.schema.json but not in values.yaml"},
	} {
		if _, err := valuesTable([]byte(c.values), []byte(schema)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
