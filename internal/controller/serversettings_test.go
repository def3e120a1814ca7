package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
)

// container builds a server container with a command, arguments and
// accelerator limits (resource name → count).
func container(name string, cmd, args []string, limits map[string]int64) corev1.Container {
	c := corev1.Container{Name: name, Command: cmd, Args: args}
	if len(limits) > 0 {
		c.Resources.Limits = corev1.ResourceList{}
		for r, n := range limits {
			c.Resources.Limits[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	return c
}

func template(cs ...corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}
}

// TestReadServerSettings: the settings a pod template gives its server, in
// every form users write them.
func TestReadServerSettings(t *testing.T) {
	gpu := map[string]int64{"nvidia.com/gpu": 4}
	for name, tc := range map[string]struct {
		tpl                 *corev1.PodTemplateSpec
		batch, tokens, accs int
		problem             string
	}{
		"vllm serve with flags as separate words": {template(container("vllm", []string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"},
			[]string{"--max-num-seqs", "128", "--max-num-batched-tokens", "8192", "--tensor-parallel-size", "4"}, gpu)), 128, 8192, 4, ""},
		"flags with = and underscores, the last one wins": {template(container("vllm", nil,
			[]string{"--max_num_seqs=64", "--max-num-seqs=96", "--max-num-batched-tokens=2048"}, nil)), 96, 2048, 0, ""},
		"a shell script": {template(container("server", []string{"/bin/sh", "-c"},
			[]string{"exec vllm serve /models/llama --max-num-seqs 200 -tp 2 --pipeline-parallel-size 2"}, nil)), 200, 0, 4, ""},
		"GPU limits beat the parallel sizes, summed over containers": {template(
			container("vllm", nil, []string{"-tp", "8"}, map[string]int64{"nvidia.com/gpu": 2}),
			container("sidecar", nil, nil, map[string]int64{"nvidia.com/gpu": 1})), 0, 0, 3, ""},
		"SGLang's names": {template(container("sglang", []string{"python3", "-m", "sglang.launch_server"},
			[]string{"--max-running-requests", "48", "--tp-size", "2", "--max-prefill-tokens", "16384"}, nil)), 48, 16384, 2, ""},
		"AMD and requests only": {&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"amd.com/gpu": resource.MustParse("8")}}}}}}, 0, 0, 8, ""},
		"nothing said": {template(container("vllm", []string{"vllm", "serve", "m"}, nil, nil)), 0, 0, 0, ""},
		"zero is refused": {template(container("vllm", nil, []string{"--max-num-seqs", "0"}, nil)), 0, 0, 0,
			`container vllm: --max-num-seqs "0" is not a whole number from 1 to 16777216`},
		"an overflow is refused": {template(container("vllm", nil, []string{"--max-num-seqs=99999999999999999999"}, nil)), 0, 0, 0,
			"is not a whole number"},
		"a template variable is refused": {template(container("vllm", nil, []string{"--max-num-seqs", "$(SEQS)"}, nil)), 0, 0, 0,
			`"$(SEQS)" is not a whole number`},
		"a flag without its value": {template(container("vllm", nil, []string{"--max-num-seqs"}, nil)), 0, 0, 0,
			"--max-num-seqs has no value"},
		"a fractional GPU count is not counted": {&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("500m")}}}}}}, 0, 0, 0, ""},
		"no template": {nil, 0, 0, 0, ""},
		// 354782 × 10271146 × 15186598 wrapped an int to 8.
		"parallel sizes whose product wraps": {template(container("vllm", nil, []string{"-tp", "354782", "-pp", "10271146", "--data-parallel-size-local", "15186598"}, nil)), 0, 0, 0,
			"the parallel sizes of the server's arguments ask for 2147483647 accelerators per replica, more than 1024"},
		"more GPUs than a replica may have": {template(container("vllm", nil, nil, map[string]int64{"nvidia.com/gpu": 4096})), 0, 0, 0,
			"container vllm's accelerator resources ask for 4096 accelerators per replica, more than 1024"},
	} {
		ss := readServerSettings(tc.tpl)
		if ss.batch != tc.batch || ss.tokens != tc.tokens || ss.accelerators != tc.accs {
			t.Errorf("%s: batch %d, tokens %d, accelerators %d; want %d, %d, %d", name, ss.batch, ss.tokens, ss.accelerators, tc.batch, tc.tokens, tc.accs)
		}
		got := strings.Join(ss.problems, "; ")
		if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
			t.Errorf("%s: problems %q, want %q", name, got, tc.problem)
		}
	}
}

// TestResolveSettings: the VariantAutoscaling's explicit values win; a
// workload that says otherwise is a disagreement (condition False), one
// that says what the VariantAutoscaling does not is used.
func TestResolveSettings(t *testing.T) {
	ss := readServerSettings(template(container("vllm", nil, []string{"--max-num-seqs", "128", "--max-num-batched-tokens", "4096"},
		map[string]int64{"nvidia.com/gpu": 2})))
	for name, tc := range map[string]struct {
		prof                *wvav1.AcceleratorProfile
		ss                  serverSettings
		batch, tokens, accs int
		ok                  bool
		reason, message     string
	}{
		"from the workload": {nil, ss, 128, 4096, 2, true, wvav1.ReasonSettingsFromWorkload,
			"acceleratorsPerReplica 2 from container vllm's accelerator resources, maxBatchSize 128 from container vllm, --max-num-seqs, maxBatchTokens 4096"},
		"explicit and equal": {&wvav1.AcceleratorProfile{MaxBatchSize: 128, AccCount: 2}, ss, 128, 4096, 2, true, wvav1.ReasonSettingsFromWorkload, "maxBatchTokens 4096"},
		"explicit and different": {&wvav1.AcceleratorProfile{MaxBatchSize: 64, AccCount: 2}, ss, 64, 4096, 2, false, wvav1.ReasonSettingsDisagree,
			"maxBatchSize is 64 in the VariantAutoscaling but 128 in the workload (container vllm, --max-num-seqs); using 64"},
		"explicit only": {&wvav1.AcceleratorProfile{MaxBatchSize: 64}, serverSettings{}, 64, 0, 0, true, wvav1.ReasonSettingsMatch, "VariantAutoscaling's"},
		"neither":       {nil, serverSettings{}, 0, 0, 0, true, wvav1.ReasonSettingsDefault, "using the defaults"},
		"an invalid argument": {nil, serverSettings{problems: []string{"container vllm: --max-num-seqs \"x\" is not a whole number"}}, 0, 0, 0, false,
			wvav1.ReasonSettingsDisagree, `--max-num-seqs "x"`},
	} {
		rs := resolveSettings(tc.prof, tc.ss)
		if rs.batch != tc.batch || rs.tokens != tc.tokens || rs.accelerators != tc.accs || rs.ok != tc.ok || rs.reason != tc.reason ||
			!strings.Contains(rs.message, tc.message) {
			t.Errorf("%s: %+v; want batch %d, tokens %d, accelerators %d, ok %v, %s %q", name, rs, tc.batch, tc.tokens, tc.accs, tc.ok, tc.reason, tc.message)
		}
	}
}

// TestEngineVariantFromWorkload: a VariantAutoscaling with no profile sizes
// its variant with the Deployment's server arguments and GPU limits, and
// prices a replica by its GPUs.
func TestEngineVariantFromWorkload(t *testing.T) {
	va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: "llama-h100", Namespace: "llm"},
		Spec: wvav1.VariantAutoscalingSpec{ModelID: "llama", Accelerator: "H100"}}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: *template(container("vllm", []string{"vllm", "serve", "llama"},
		[]string{"--max-num-seqs", "96", "--max-num-batched-tokens", "8192"}, map[string]int64{"nvidia.com/gpu": 4}))}}
	set := settings{Accelerators: map[string]config.Accelerator{"H100": {Name: "H100", Cost: 40}}}
	v := &variant{va: va, target: fromDeployment(d)}
	ev := engineVariant(v, set, nil).Variant
	if ev.MaxBatchSize != 96 || ev.MaxBatchTokens != 8192 || ev.AcceleratorsPerReplica != 4 || ev.Cost != 160 {
		t.Errorf("variant %+v: want a batch of 96, 8192 tokens, 4 GPUs at 40 each", ev)
	}
	if v.settings.reason != wvav1.ReasonSettingsFromWorkload {
		t.Errorf("settings %+v", v.settings)
	}
}

// TestServerSettingsOnAPIServer: on the real API server, a
// VariantAutoscaling without a profile takes its Deployment's
// --max-num-seqs and GPU limits (ServerSettingsConsistent True,
// ServerSettingsFromWorkload; TestEngineVariantFromWorkload shows the
// planned variant uses them); one whose
// profile says otherwise keeps its own values, with the condition False
// and one Warning Event however many cycles run.
func TestServerSettingsOnAPIServer(t *testing.T) {
	f := newFixture(t)
	rec := events.NewFakeRecorder(16)
	f.planner.Announcer = &announcer{Recorder: rec, Log: logr.Discard()}
	for _, name := range []string{"from-workload", "explicit"} {
		d := f.deployment(name, 1)
		c := container("vllm", []string{"vllm", "serve", model}, []string{"--max-num-seqs", "128"}, map[string]int64{"nvidia.com/gpu": 2})
		c.Image = "vllm/vllm-openai"
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		if err := env.Client.Update(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	f.va("from-workload", model, nil)
	f.va("explicit", model, func(va *wvav1.VariantAutoscaling) {
		va.Spec.ModelProfile = &wvav1.ModelProfile{Accelerators: []wvav1.AcceleratorProfile{{Acc: "H100", MaxBatchSize: 64}}}
	})
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model,
		Pods: append(pods("from-workload", 1, 0.3, 0), pods("explicit", 1, 0.3, 0)...)}}})
	for range 3 {
		f.clock.Step(60e9)
		f.cycle()
	}
	c := wantCond(t, f.reconcile("from-workload"), wvav1.ConditionServerSettings, metav1.ConditionTrue, wvav1.ReasonSettingsFromWorkload)
	if !strings.Contains(c.Message, "maxBatchSize 128") || !strings.Contains(c.Message, "acceleratorsPerReplica 2") {
		t.Errorf("message %q", c.Message)
	}
	c = wantCond(t, f.reconcile("explicit"), wvav1.ConditionServerSettings, metav1.ConditionFalse, wvav1.ReasonSettingsDisagree)
	if !strings.Contains(c.Message, "maxBatchSize is 64 in the VariantAutoscaling but 128 in the workload") {
		t.Errorf("message %q", c.Message)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning ServerSettingsDisagree maxBatchSize is 64") {
		t.Errorf("events %q, want one ServerSettingsDisagree warning", got)
	}
}
