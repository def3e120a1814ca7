package servermetrics

import (
	"embed"
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

// Family is one metric family a server exports.
type Family struct {
	// Name as exposed: counters with _total, histograms without the
	// _bucket, _sum and _count of their series.
	Name string `json:"name"`
	// Type is counter, gauge or histogram.
	Type string `json:"type"`
	// Labels are the family's label names (le of histograms aside), sorted.
	Labels []string `json:"labels"`
	// Since is the release (or pull request) that introduced it, with
	// notes.
	Since string `json:"since"`
	// Optional names what the server needs to export it (a flag, a kind of
	// model); empty when every server exports it.
	Optional string `json:"optional,omitempty"`
}

// Series are the names of the family's series: the family's own, or a
// histogram's _bucket, _sum and _count.
func (f Family) Series() []string {
	if f.Type == "histogram" {
		return []string{f.Name + "_bucket", f.Name + "_sum", f.Name + "_count"}
	}
	return []string{f.Name}
}

// Fixture is the pinned list of the families one release line of a server
// exports.
type Fixture struct {
	Engine   string   `json:"engine"`
	Version  string   `json:"version"`
	Source   string   `json:"source"`
	Families []Family `json:"families"`
}

// Fixtures' names.
const (
	FixtureVLLMCurrent = "vllm-current"
	FixtureVLLMLegacy  = "vllm-legacy"
	FixtureSGLang      = "sglang"
)

//go:embed fixtures/*.yaml
var fixtureFiles embed.FS

// LoadFixture reads a pinned fixture by name.
func LoadFixture(name string) (Fixture, error) {
	data, err := fixtureFiles.ReadFile("fixtures/" + name + ".yaml")
	if err != nil {
		return Fixture{}, fmt.Errorf("servermetrics: no fixture %q", name)
	}
	var f Fixture
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return Fixture{}, fmt.Errorf("servermetrics: fixture %s: %w", name, err)
	}
	for i := range f.Families {
		sort.Strings(f.Families[i].Labels)
	}
	return f, nil
}

// MustFixture is LoadFixture for the embedded fixtures, which are tested
// to load: it panics on an error.
func MustFixture(name string) Fixture {
	f, err := LoadFixture(name)
	if err != nil {
		panic(err)
	}
	return f
}

// Default are the families every server exports (Optional empty).
func (f Fixture) Default() []Family {
	var out []Family
	for _, fam := range f.Families {
		if fam.Optional == "" {
			out = append(out, fam)
		}
	}
	return out
}

// Family finds a family by name.
func (f Fixture) Family(name string) (Family, bool) {
	for _, fam := range f.Families {
		if fam.Name == name {
			return fam, true
		}
	}
	return Family{}, false
}

// Has says whether a series of that name belongs to one of the fixture's
// families, and returns the family.
func (f Fixture) Has(series string) (Family, bool) {
	for _, fam := range f.Families {
		for _, s := range fam.Series() {
			if s == series {
				return fam, true
			}
		}
	}
	return Family{}, false
}
