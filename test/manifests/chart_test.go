package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// chartDir is the chart's folder.
func chartDir() string { return filepath.Join(testenv.Root(), "charts", "wva") }

// loadChart loads charts/wva as `helm install charts/wva` does (.helmignore
// applied, crds/ and files/ included).
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// serverCapabilities are what `helm install` learns from the API server by
// discovery: its version and every group/version and group/version/Kind it
// serves. The test server has the Prometheus operator's and KEDA's CRDs, so
// `auto` renders the ServiceMonitor and the PrometheusRule as it would in
// such a cluster.
func serverCapabilities(t *testing.T) *chartutil.Capabilities {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, l := range lists {
		versions = append(versions, l.GroupVersion)
		for _, r := range l.APIResources {
			versions = append(versions, l.GroupVersion+"/"+r.Kind)
		}
	}
	return withKube(chartutil.VersionSet(versions), v.GitVersion)
}

// withKube are capabilities with these API versions and Kubernetes version.
func withKube(versions chartutil.VersionSet, kube string) *chartutil.Capabilities {
	caps := *chartutil.DefaultCapabilities
	caps.APIVersions = versions
	major, minor, _ := strings.Cut(strings.TrimPrefix(kube, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	caps.KubeVersion = chartutil.KubeVersion{Version: kube, Major: major, Minor: minor}
	return &caps
}

// release is one `helm install <name> charts/wva -n <namespace> -f values`.
type release struct {
	name, namespace string
	values          map[string]any
	caps            *chartutil.Capabilities
}

// render renders the release as `helm install` does: the cluster's version
// checked against kubeVersion, the values coalesced with values.yaml and
// validated against values.schema.json, then every template. objs are the
// objects in template order, notes the rendered NOTES.txt.
func (r release) render(ch *chart.Chart) (objs []object, notes string, err error) {
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, r.caps.KubeVersion.String()) {
		return nil, "", fmt.Errorf("chart requires kubeVersion %s, the cluster is %s", ch.Metadata.KubeVersion, r.caps.KubeVersion)
	}
	vals, err := chartutil.ToRenderValues(ch, r.values, chartutil.ReleaseOptions{Name: r.name, Namespace: r.namespace, IsInstall: true}, r.caps)
	if err != nil {
		return nil, "", err
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "NOTES.txt"):
			notes = out[n]
		case strings.HasSuffix(n, ".yaml"):
			o, err := parseRendered(n, out[n])
			if err != nil {
				return nil, "", err
			}
			objs = append(objs, o...)
		}
	}
	return objs, notes, nil
}

// mustRender renders the release or fails the test.
func (r release) mustRender(t *testing.T, ch *chart.Chart) ([]object, string) {
	t.Helper()
	objs, notes, err := r.render(ch)
	if err != nil {
		t.Fatalf("release %s: %v", r.name, err)
	}
	return objs, notes
}

// parseRendered splits a rendered template into its objects, strictly (a
// duplicate key is an error), as the samples are read.
func parseRendered(name, text string) ([]object, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var objs []object
	for i := 0; ; i++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w\n%s", name, i, err, doc)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("%s#%d: %w", name, i, err)
		}
		objs = append(objs, object{file: name, doc: i, u: u})
	}
}

// valueSet is a documented set of values: the defaults, and each file of
// the chart's ci/ (the examples its README lists).
type valueSet struct {
	name   string
	values map[string]any
}

func valueSets(t *testing.T) []valueSet {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(), "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no charts/wva/ci/*-values.yaml (%v)", err)
	}
	sets := []valueSet{{name: "defaults", values: map[string]any{}}}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, valueSet{name: strings.TrimSuffix(filepath.Base(f), "-values.yaml"), values: v})
	}
	return sets
}

// TestChartValueSets renders the chart with every documented value set, as
// `helm install` into a cluster like the test server (Kubernetes 1.36 with
// the Prometheus operator's and KEDA's CRDs), and has the API server
// validate every object: a server-side dry run with strict field
// validation, nothing dropped (the ServiceMonitor, the PrometheusRule and
// the ScaledObjects against their real schemas). Then what every release
// must be (chartChecks) and what each set is for (setChecks).
func TestChartValueSets(t *testing.T) {
	ch := loadChart(t)
	caps := serverCapabilities(t)
	for i, s := range valueSets(t) {
		t.Run(s.name, func(t *testing.T) {
			r := release{name: "wva", namespace: fmt.Sprintf("wva-chart-%d", i), values: s.values, caps: caps}
			objs, notes := r.mustRender(t, ch)
			for _, o := range objs {
				accepted(t, o)
			}
			checkRelease(t, r, objs)
			check, ok := setChecks[s.name]
			if !ok {
				t.Fatalf("no setChecks entry for the value set %s: say what it is for", s.name)
			}
			check(t, r, objs, notes)
		})
	}
}

// accepted fails unless the API server takes the object as it is.
func accepted(t *testing.T, o object) {
	t.Helper()
	got, err := dryRun(t, o.u)
	if err != nil {
		t.Errorf("%s rejected: %v", o, err)
		return
	}
	for _, part := range []string{"spec", "data", "rules", "roleRef", "subjects"} {
		want, ok := o.u.Object[part]
		if !ok {
			continue
		}
		if d := dropped(want, got.Object[part], part); len(d) > 0 {
			t.Errorf("%s: the API server did not keep %v", o, d)
		}
	}
}

// kinds counts the objects of each kind.
func kinds(objs []object) map[string]int {
	k := map[string]int{}
	for _, o := range objs {
		k[o.u.GetKind()]++
	}
	return k
}

// one returns the only object of a kind and name ("" any name).
func one(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	i := slices.IndexFunc(objs, func(o object) bool {
		return o.u.GetKind() == kind && (name == "" || o.u.GetName() == name)
	})
	if i < 0 {
		t.Fatalf("no %s %s rendered (kinds: %v)", kind, name, kinds(objs))
	}
	return objs[i]
}

// readRepoFile reads a file of the repository.
func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
