// What each documented value set of the chart (charts/wva/ci) is for,
// checked on its rendered objects; the KEDA and HPA sets are held to the
// samples' rules (semantics_test.go).

package manifests

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// setChecks: one per value set of valueSets (TestChartValueSets fails on a
// set without one).
var setChecks = map[string]func(t *testing.T, r release, objs []object, notes string){
	"defaults":              checkDefaultsSet,
	"kube-prometheus-stack": checkKubePrometheusStackSet,
	"keda":                  checkKEDASet,
	"hpa":                   checkHPASet,
	"namespaced":            checkNamespacedSet,
	"prometheus-tls":        checkPrometheusTLSSet,
	"prometheus-secret":     checkPrometheusSecretSet,
	"scheduling":            checkSchedulingSet,
	"external-configmaps":   checkExternalConfigMapsSet,
	"insecure-metrics":      checkInsecureMetricsSet,
}

// checkDefaultsSet: all seven ConfigMaps under their documented names; the
// ServiceMonitor and the PrometheusRule because the cluster serves their
// CRDs; a PDB for the two replicas; no dashboard, KEDA or HPA objects; the
// notes name the metric, the service classes and the next steps.
func checkDefaultsSet(t *testing.T, r release, objs []object, notes string) {
	k := kinds(objs)
	for kind, n := range map[string]int{"ConfigMap": 7, "ServiceMonitor": 1, "PrometheusRule": 1, "PodDisruptionBudget": 1,
		"ServiceAccount": 1, "ScaledObject": 0, "HorizontalPodAutoscaler": 0} {
		if k[kind] != n {
			t.Errorf("%d %s, want %d (kinds %v)", k[kind], kind, n, k)
		}
	}
	checkEvaluatedConfig(t, "the chart's defaults", configMapData(t, r, objs, "main"), configMapData(t, r, objs, "queueingModel"))
	checkRules(t, one(t, objs, "PrometheusRule", "wva-alerts"))
	checkNotesAdapterRule(t, notes)
	sm := one(t, objs, "ServiceMonitor", "wva-controller")
	if ns, _, _ := unstructured.NestedStringSlice(sm.u.Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(ns, []string{r.namespace}) {
		t.Errorf("ServiceMonitor selects namespaces %v, want the release's", ns)
	}
	pdb := one(t, objs, "PodDisruptionBudget", "wva-controller")
	if n, _, _ := unstructured.NestedInt64(pdb.u.Object, "spec", "minAvailable"); n != 1 {
		t.Errorf("PDB minAvailable %d, want 1", n)
	}
	for _, want := range []string{`inferno_desired_replicas{variant_name="<va>",exported_namespace="<its namespace>"}`,
		"spec.sloClassRef: {name: service-classes-config", "kubectl -n " + r.namespace + " rollout status deployment/wva-controller",
		"config/samples/prometheus-adapter-values.yaml", "seriesQuery: 'inferno_desired_replicas{variant_name!=\"\",exported_namespace!=\"\"}'",
		"ServiceMonitor wva-controller", "bound to wva-metrics-reader"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, notes)
		}
	}
}

// checkNotesAdapterRule: the adapter rule the notes print is the one of
// config/samples/prometheus-adapter-values.yaml.
func checkNotesAdapterRule(t *testing.T, notes string) {
	t.Helper()
	_, snippet, ok := strings.Cut(notes, "\n    rules:\n")
	if !ok {
		t.Fatalf("the notes print no adapter rules:\n%s", notes)
	}
	lines := strings.Split("rules:\n"+snippet, "\n")
	for i, l := range lines[1:] {
		lines[i+1] = strings.TrimPrefix(l, "    ")
	}
	var got, sample map[string]any
	if err := yaml.UnmarshalStrict([]byte(strings.Join(lines, "\n")), &got); err != nil {
		t.Fatalf("the notes' adapter rules: %v", err)
	}
	if err := yaml.Unmarshal(readRepoFile(t, "config/samples/prometheus-adapter-values.yaml"), &sample); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalise(t, got["rules"]), normalise(t, sample["rules"])) {
		t.Errorf("the notes' adapter rules %v are not the sample's %v", got["rules"], sample["rules"])
	}
}

// checkRules: the PrometheusRule's spec is the chart's rules file, and
// every expression parses as PromQL.
func checkRules(t *testing.T, o object) {
	t.Helper()
	var want map[string]any
	if err := yaml.Unmarshal(readRepoFile(t, "charts/wva/files/prometheus-rules.yaml"), &want); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(o.u.Object, "spec")
	if !reflect.DeepEqual(normalise(t, spec), normalise(t, want)) {
		t.Error("the PrometheusRule's spec is not files/prometheus-rules.yaml")
	}
	groups, _, _ := unstructured.NestedSlice(spec, "groups")
	n := 0
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, rule := range rules {
			expr, _, _ := unstructured.NestedString(rule.(map[string]any), "expr")
			if _, err := promql.ParseExpr(expr); err != nil {
				t.Errorf("rule expression %q: %v", expr, err)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("the PrometheusRule has no rules")
	}
}

// normalise round-trips a value through JSON (int64 and float64 alike).
func normalise(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkKubePrometheusStackSet: kube-prometheus-stack's selectors find the
// ServiceMonitor and the rules, its Prometheus may scrape, its sidecar
// loads the dashboard.
func checkKubePrometheusStackSet(t *testing.T, r release, objs []object, _ string) {
	for _, o := range []object{one(t, objs, "ServiceMonitor", ""), one(t, objs, "PrometheusRule", "")} {
		if o.u.GetLabels()["release"] != "kube-prometheus-stack" {
			t.Errorf("%s lacks the label release: kube-prometheus-stack", o)
		}
	}
	want := "ClusterRoleBinding /wva-metrics-reader-rolebinding -> wva-metrics-reader"
	if b := bindingsOf(objs, "kube-prometheus-stack-prometheus", "monitoring"); !slices.Contains(b, want) {
		t.Errorf("Prometheus's service account: bindings %v, want %s", b, want)
	}
	dash := one(t, objs, "ConfigMap", "wva-grafana-dashboard")
	if dash.u.GetLabels()["grafana_dashboard"] != "1" || dash.u.GetAnnotations()["grafana_folder"] != "WVA" {
		t.Errorf("dashboard ConfigMap labels %v, annotations %v", dash.u.GetLabels(), dash.u.GetAnnotations())
	}
	got, _, _ := unstructured.NestedString(dash.u.Object, "data", "wva-overview.json")
	if got != string(readRepoFile(t, "charts/wva/files/grafana-dashboard.json")) || !json.Valid([]byte(got)) {
		t.Error("the dashboard ConfigMap does not hold files/grafana-dashboard.json")
	}
	if u := configMapData(t, r, objs, "main")["PROMETHEUS_BASE_URL"]; u != "http://kube-prometheus-stack-prometheus.monitoring.svc:9090" {
		t.Errorf("PROMETHEUS_BASE_URL %s", u)
	}
}

// selectsVariant reports a selector that does not pick the series of the
// variant the object is named after, in its namespace.
func selectsVariant(o object, sel map[string]string) []string {
	if sel["variant_name"] != o.u.GetName() || sel["exported_namespace"] != o.u.GetNamespace() {
		return []string{fmt.Sprintf("%s: selects %v, not the variant %s/%s", o, sel, o.u.GetNamespace(), o.u.GetName())}
	}
	return nil
}

// sampleSpec is the spec of the sample object in a file of config/samples.
func sampleSpec(t *testing.T, file string) map[string]any {
	t.Helper()
	var u map[string]any
	if err := yaml.Unmarshal(readRepoFile(t, "config/samples/"+file), &u); err != nil {
		t.Fatal(err)
	}
	spec, _ := u["spec"].(map[string]any)
	return spec
}

// checkKEDASet: one ScaledObject per variant, passing the samples' checks
// (checkScaledObject: AverageValue on the trigger, ignoreNullValues
// "false", fallback, activation, behavior), equal to the sample it mirrors.
func checkKEDASet(t *testing.T, _ release, objs []object, notes string) {
	so := one(t, objs, "ScaledObject", "llama-8b-h100")
	if p := checkScaledObject(so, selectsVariant); len(p) > 0 {
		t.Errorf("the ScaledObject has problems:\n  %s", strings.Join(p, "\n  "))
	}
	if got, want := normalise(t, so.u.Object["spec"]), normalise(t, sampleSpec(t, "keda-scaledobject.yaml")); !reflect.DeepEqual(got, want) {
		t.Errorf("the ScaledObject differs from config/samples/keda-scaledobject.yaml:\n got %v\nwant %v", got, want)
	}
	if k := kinds(objs); k["HorizontalPodAutoscaler"] != 0 {
		t.Error("KEDA mode renders HPAs")
	}
	if !strings.Contains(notes, "kubectl get scaledobject") || strings.Contains(notes, "rules:\n      default: false") {
		t.Errorf("KEDA notes:\n%s", notes)
	}
}

// checkHPASet: one HPA per variant, passing the samples' checks (checkHPA:
// behavior, AverageValue 1, a metric the adapter's values serve), equal to
// config/samples/hpa.yaml (tolerance included: the server is 1.36).
func checkHPASet(t *testing.T, _ release, objs []object, notes string) {
	hpa := one(t, objs, "HorizontalPodAutoscaler", "llama-8b-h100")
	if p := checkHPA(hpa, selectsVariant, loadAdapterValues(t)); len(p) > 0 {
		t.Errorf("the HPA has problems:\n  %s", strings.Join(p, "\n  "))
	}
	if got, want := normalise(t, hpa.u.Object["spec"]), normalise(t, sampleSpec(t, "hpa.yaml")); !reflect.DeepEqual(got, want) {
		t.Errorf("the HPA differs from config/samples/hpa.yaml:\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(notes, "/apis/external.metrics.k8s.io/v1beta1/namespaces/<namespace>/inferno_desired_replicas") {
		t.Errorf("HPA notes lack the external metrics check:\n%s", notes)
	}
}

// checkNamespacedSet: RoleBindings in the watched namespaces only, node
// listing for the limited optimizer, the queueing model on.
func checkNamespacedSet(t *testing.T, r release, objs []object, _ string) {
	b := bindingsOf(objs, "wva-controller", r.namespace)
	for _, want := range []string{
		"RoleBinding llm-d/wva-workloads-rolebinding -> wva-workloads-role",
		"RoleBinding llm-d-staging/wva-direct-actuation-rolebinding -> wva-direct-actuation-role",
		"ClusterRoleBinding /wva-node-reader-rolebinding -> wva-node-reader-role",
	} {
		if !slices.Contains(b, want) {
			t.Errorf("no %s in %v", want, b)
		}
	}
	if slices.Contains(b, "ClusterRoleBinding /wva-workloads-rolebinding -> wva-workloads-role") {
		t.Error("the workloads role is bound cluster-wide with watchNamespaces")
	}
	if args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--watch-namespaces=llm-d,llm-d-staging") {
		t.Errorf("args %v lack the watched namespaces", args)
	}
	if _, ok := configMapData(t, r, objs, "queueingModel")["default"]; !ok {
		t.Error("the queueing-model ConfigMap lacks its default")
	}
}

// checkPrometheusTLSSet: the CA bundle from a ConfigMap and a projected
// token are mounted read-only, and the main ConfigMap points at them.
func checkPrometheusTLSSet(t *testing.T, r release, objs []object, _ string) {
	checkPrometheusFiles(t, r, objs, "/etc/wva/prometheus/ca/service-ca.crt")
	vols := deployment(t, objs).Spec.Template.Spec.Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == "prometheus-ca" })
	if i < 0 || vols[i].ConfigMap == nil || vols[i].ConfigMap.Name != "openshift-service-ca.crt" || vols[i].ConfigMap.Items[0].Key != "service-ca.crt" {
		t.Errorf("no CA volume from the ConfigMap openshift-service-ca.crt: %+v", vols)
	}
	i = slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == "prometheus-token" })
	if i < 0 || vols[i].Projected == nil || vols[i].Projected.Sources[0].ServiceAccountToken == nil {
		t.Errorf("no projected service-account token: %+v", vols)
	}
}

// checkPrometheusSecretSet: the CA bundle and the token from Secrets.
func checkPrometheusSecretSet(t *testing.T, r release, objs []object, _ string) {
	checkPrometheusFiles(t, r, objs, "/etc/wva/prometheus/ca/ca.crt")
	secrets := map[string]string{}
	for _, v := range deployment(t, objs).Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if secrets["prometheus-ca"] != "prometheus-ca" || secrets["prometheus-token"] != "prometheus-token" {
		t.Errorf("secret volumes %v", secrets)
	}
}

// checkPrometheusFiles: PROMETHEUS_CA_CERT_PATH and the token file name
// mounted files, mounted read-only.
func checkPrometheusFiles(t *testing.T, r release, objs []object, ca string) {
	t.Helper()
	data := configMapData(t, r, objs, "main")
	if data["PROMETHEUS_CA_CERT_PATH"] != ca || data["PROMETHEUS_BEARER_TOKEN_FILE"] != "/etc/wva/prometheus/token/token" {
		t.Errorf("main ConfigMap %v", data)
	}
	mounts := map[string]string{}
	for _, m := range deployment(t, objs).Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.ReadOnly {
			mounts[m.Name] = m.MountPath
		}
	}
	if mounts["prometheus-ca"] != "/etc/wva/prometheus/ca" || mounts["prometheus-token"] != "/etc/wva/prometheus/token" {
		t.Errorf("read-only mounts %v", mounts)
	}
}

// checkSchedulingSet: every scheduling value reaches the pod.
func checkSchedulingSet(t *testing.T, _ release, objs []object, _ string) {
	d := deployment(t, objs)
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	for what, ok := range map[string]bool{
		"priorityClassName":        ps.PriorityClassName == "system-cluster-critical",
		"tolerations":              len(ps.Tolerations) == 1,
		"nodeSelector":             len(ps.NodeSelector) == 1,
		"affinity":                 ps.Affinity != nil && ps.Affinity.PodAntiAffinity != nil,
		"imagePullSecrets":         len(ps.ImagePullSecrets) == 1 && ps.ImagePullSecrets[0].Name == "regcred",
		"image":                    c.Image == "registry.example.com/wva:0.1.0" && c.ImagePullPolicy == "Always",
		"extraEnv":                 slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" }),
		"extraArgs and logLevel":   slices.Contains(c.Args, "--prometheus-timeout=20s") && slices.Contains(c.Args, "--log-level=debug"),
		"extraVolumes and mounts":  len(ps.Volumes) == 1 && len(c.VolumeMounts) == 1 && c.VolumeMounts[0].MountPath == "/tmp",
		"podLabels":                d.Spec.Template.Labels["example.com/cost-center"] == "ml" && d.Spec.Template.Labels["control-plane"] == "controller-manager",
		"podAnnotations":           d.Spec.Template.Annotations["example.com/team"] == "platform",
		"topologySpreadConstraint": len(ps.TopologySpreadConstraints) == 1 && ps.TopologySpreadConstraints[0].LabelSelector != nil,
	} {
		if !ok {
			t.Errorf("%s not applied to the pod", what)
		}
	}
	if sel := ps.TopologySpreadConstraints[0].LabelSelector; sel != nil && !reflect.DeepEqual(sel.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("topology spread selects %v, want the pods' selector %v", sel.MatchLabels, d.Spec.Selector.MatchLabels)
	}
	pdb := one(t, objs, "PodDisruptionBudget", "")
	if n, _, _ := unstructured.NestedInt64(pdb.u.Object, "spec", "maxUnavailable"); n != 1 {
		t.Errorf("PDB maxUnavailable %d, want 1", n)
	}
	if sa := one(t, objs, "ServiceAccount", ""); sa.u.GetAnnotations()["eks.amazonaws.com/role-arn"] == "" {
		t.Error("the service account lacks its annotation")
	}
}

// checkExternalConfigMapsSet: no ConfigMap rendered; the controller is
// given the names of the ones managed elsewhere (checkNames).
func checkExternalConfigMapsSet(t *testing.T, _ release, objs []object, notes string) {
	if k := kinds(objs); k["ConfigMap"] != 0 {
		t.Errorf("%d ConfigMaps rendered, want none", k["ConfigMap"])
	}
	if !strings.Contains(notes, "sloClassRef: {name: slo-classes") {
		t.Errorf("the notes do not name the service classes' ConfigMap:\n%s", notes)
	}
}

// checkInsecureMetricsSet: plain HTTP on 8080 and a ServiceMonitor that
// scrapes it so, keeping the series' labels (honorLabels), with its
// relabelings; the notes then select on namespace.
func checkInsecureMetricsSet(t *testing.T, _ release, objs []object, notes string) {
	c := deployment(t, objs).Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--metrics-secure=false") || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("args %v, ports %v", c.Args, c.Ports)
	}
	sm := one(t, objs, "ServiceMonitor", "")
	ep, _, _ := unstructured.NestedSlice(sm.u.Object, "spec", "endpoints")
	e := ep[0].(map[string]any)
	if e["scheme"] != "http" || e["honorLabels"] != true || e["bearerTokenFile"] != nil || e["scrapeTimeout"] != "10s" ||
		len(e["relabelings"].([]any)) != 1 || len(e["metricRelabelings"].([]any)) != 1 {
		t.Errorf("ServiceMonitor endpoint %v", e)
	}
	if !strings.Contains(notes, `inferno_desired_replicas{variant_name="<va>",namespace="<its namespace>"}`) {
		t.Errorf("with honorLabels the notes should select on namespace:\n%s", notes)
	}
}
