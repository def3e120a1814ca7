package servermetrics

import (
	"strings"
	"testing"
)

// figures lists a schema's figures with their alternatives as series
// names, and the type each series must have.
type figure struct {
	name   string
	series [][]string // per alternative, the series it reads
	typ    string     // of the family each series belongs to ("" any)
}

func figuresOf(s Schema) []figure {
	names := func(l []string) [][]string {
		out := make([][]string, len(l))
		for i, n := range l {
			out[i] = []string{n}
		}
		return out
	}
	ratios := func(l []Ratio) [][]string {
		out := make([][]string, len(l))
		for i, r := range l {
			out[i] = []string{r.Sum, r.Count}
		}
		return out
	}
	caches := make([][]string, len(s.Cache))
	for i, c := range s.Cache {
		caches[i] = []string{c.Info + c.TokensGauge}
	}
	return []figure{
		{"requests", names(s.Requests), "counter"},
		{"prompt tokens", ratios(s.PromptTokens), ""},
		{"output tokens", ratios(s.OutputTokens), ""},
		{"TTFT", ratios(s.TTFT), "histogram"},
		{"ITL", ratios(s.ITL), "histogram"},
		{"KV usage", names(s.KVUsage), "gauge"},
		{"waiting", names(s.Waiting), "gauge"},
		{"running", names(s.Running), "gauge"},
		{"cache", caches, "gauge"},
	}
}

// resolves says which alternative of a figure the fixture's default
// families serve (-1: none).
func resolves(f Fixture, alts [][]string) int {
	def := Fixture{Families: f.Default()}
	for i, alt := range alts {
		ok := true
		for _, s := range alt {
			if _, has := def.Has(s); !has {
				ok = false
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

func TestFixturesLoad(t *testing.T) {
	for _, name := range []string{FixtureVLLMCurrent, FixtureVLLMLegacy, FixtureSGLang} {
		f, err := LoadFixture(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Engine == "" || f.Version == "" || !strings.Contains(f.Source, "https://github.com/") || len(f.Families) == 0 {
			t.Errorf("%s: engine, version, a source a reader can open and families are required: %+v", name, f)
		}
		seen := map[string]bool{}
		for _, fam := range f.Families {
			if seen[fam.Name] {
				t.Errorf("%s: %s listed twice", name, fam.Name)
			}
			seen[fam.Name] = true
			switch fam.Type {
			case "counter":
				if !strings.HasSuffix(fam.Name, "_total") {
					t.Errorf("%s: counter %s is exposed with _total", name, fam.Name)
				}
			case "gauge", "histogram":
			default:
				t.Errorf("%s: %s has type %q", name, fam.Name, fam.Type)
			}
			if len(fam.Labels) == 0 || fam.Since == "" {
				t.Errorf("%s: %s needs labels and since", name, fam.Name)
			}
		}
	}
	if _, err := LoadFixture("vllm-0.1"); err == nil {
		t.Error("an unknown fixture loaded")
	}
}

// TestSchemasMatchFixtures: every series a schema selects exists in one of
// its engine's fixtures with the right type and labels; every figure is
// served by every fixture's default families; the preferred names are the
// current server's.
func TestSchemasMatchFixtures(t *testing.T) {
	for _, tc := range []struct {
		s        Schema
		current  string
		fixtures []string
	}{
		{VLLM, FixtureVLLMCurrent, []string{FixtureVLLMCurrent, FixtureVLLMLegacy}},
		{SGLang, FixtureSGLang, []string{FixtureSGLang}},
	} {
		fixtures := make([]Fixture, len(tc.fixtures))
		for i, n := range tc.fixtures {
			fixtures[i] = MustFixture(n)
		}
		checkSeriesExist(t, tc.s, fixtures, tc.fixtures)
		for i, f := range fixtures {
			checkFiguresResolve(t, tc.s, f, tc.fixtures[i], tc.fixtures[i] == tc.current)
		}
		checkCacheLabels(t, tc.s, MustFixture(tc.current))
	}
}

// checkSeriesExist: every series the schema selects is in some fixture.
func checkSeriesExist(t *testing.T, s Schema, fixtures []Fixture, names []string) {
	t.Helper()
	for _, series := range s.Series() {
		found := false
		for _, f := range fixtures {
			if _, ok := f.Has(series); ok {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %s is in no fixture of %v", s.Name, series, names)
		}
	}
}

// checkFiguresResolve: the fixture's default families serve every figure,
// through a series of the right type; the current fixture through the
// first alternative.
func checkFiguresResolve(t *testing.T, s Schema, f Fixture, name string, current bool) {
	t.Helper()
	for _, fig := range figuresOf(s) {
		alt := resolves(f, fig.series)
		if alt < 0 {
			t.Errorf("%s: %s: fixture %s serves none of %v", s.Name, fig.name, name, fig.series)
			continue
		}
		if current && alt != 0 {
			t.Errorf("%s: %s: the current server's name is not the first alternative: %v", s.Name, fig.name, fig.series)
		}
		for _, series := range fig.series[alt] {
			if fam, _ := f.Has(series); fig.typ != "" && fam.Type != fig.typ {
				t.Errorf("%s: %s: %s is a %s, want a %s", s.Name, fig.name, series, fam.Type, fig.typ)
			}
		}
	}
}

// checkCacheLabels: the info series of the cache's size has the labels
// the schema reads, and no model label (it is read by namespace).
func checkCacheLabels(t *testing.T, s Schema, current Fixture) {
	t.Helper()
	for _, c := range s.Cache {
		fam, ok := current.Family(c.Info)
		if c.Info == "" || !ok {
			continue
		}
		for _, l := range []string{c.BlocksLabel, c.BlockSizeLabel, c.TokensLabel} {
			if !contains(fam.Labels, l) {
				t.Errorf("%s: %s has no label %s", s.Name, c.Info, l)
			}
		}
		if contains(fam.Labels, s.ModelLabel) {
			t.Errorf("%s: %s has the model label: the collector need not read it by namespace", s.Name, c.Info)
		}
	}
}

func TestLookup(t *testing.T) {
	if s, err := Lookup(""); err != nil || s.Name != Default {
		t.Errorf(`Lookup("") = %v, %v`, s.Name, err)
	}
	if s, err := Lookup("sglang"); err != nil || s.Name != "sglang" {
		t.Errorf(`Lookup("sglang") = %v, %v`, s.Name, err)
	}
	if _, err := Lookup("tgi"); err == nil || !strings.Contains(err.Error(), "sglang, vllm") {
		t.Errorf(`Lookup("tgi") = %v, want an error naming the known schemas`, err)
	}
	if got := Alternatives([]string{"a", "b"}); got != "a (or b)" {
		t.Errorf("Alternatives = %q", got)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
