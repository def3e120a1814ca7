package controller

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// TestNodeInventory counts GPUs from GPU feature discovery's labels on the
// real API server's nodes: allocatable first, the count label otherwise;
// cordoned nodes and nodes without a product label do not count.
func TestNodeInventory(t *testing.T) {
	ctx := context.Background()
	node := func(name, product, count string, gpus int64, cordoned bool) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
		if product != "" {
			n.Labels[labelGPUProduct] = product
		}
		if count != "" {
			n.Labels[labelGPUCount] = count
		}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, n) })
		if gpus > 0 {
			n.Status.Allocatable = corev1.ResourceList{resourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
			n.Status.Capacity = n.Status.Allocatable
			if err := env.Client.Status().Update(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	node("gpu-a", "NVIDIA-H100-80GB-HBM3", "8", 8, false)
	node("gpu-b", "NVIDIA-H100-80GB-HBM3", "8", 6, false) // two GPUs unhealthy: allocatable wins
	node("gpu-c", "NVIDIA-L40S", "4", 0, false)           // no device plugin status yet: the label
	node("gpu-d", "NVIDIA-H100-80GB-HBM3", "8", 8, true)  // cordoned
	node("cpu-e", "", "", 0, false)
	inv, err := newInventory("nodes", env.Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := inv.Discover(ctx, []string{"H100", "L40S", "A100"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"H100": 14, "L40S": 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("inventory %v, want %v", got, want)
	}
	if productAccelerator("NVIDIA-A100-SXM4-80GB", []string{"A100", "A10"}) != "A100" || productAccelerator("AMD-MI300X", []string{"H100"}) != "AMD-MI300X" {
		t.Error("product mapping")
	}
	if _, err := newInventory("gpu-oracle", env.Client, nil); err == nil {
		t.Error("unknown capacity source accepted")
	}
}

// TestLimitedMode: with WVA_OPTIMIZER limited and a static inventory of 3
// H100s, two saturated variants of one model cannot grow past it.
func TestLimitedMode(t *testing.T) {
	f := newFixture(t)
	names := defaultConfigNames()
	for name, data := range map[string]map[string]string{
		names.Main:      {"WVA_OPTIMIZER": "limited", "WVA_CAPACITY_SOURCE": "configmap"},
		names.Inventory: {"H100": "3"},
	} {
		if err := f.planner.Config.apply(name, data, true); err != nil {
			t.Fatal(err)
		}
	}
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.99, 30)}}})
	f.cycle()
	va := f.reconcile("llama-h100")
	if got := va.Status.DesiredOptimizedAlloc; got.NumReplicas != 3 || got.Reason != string(engine.ReasonInventoryLimited) {
		t.Fatalf("desired %+v, want 3 (inventory-limited)", got)
	}
}

// TestNodeGPUsBounded: a node's GPU count outside [0, 2^16] (a broken
// label or device plugin) counts as none; a label near MaxInt64 once made
// the type's sum wrap negative, and limited mode then failed every cycle.
func TestNodeGPUsBounded(t *testing.T) {
	withLabel := func(v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelGPUCount: v}}}
	}
	withAllocatable := func(q int64) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{resourceGPU: *resource.NewQuantity(q, resource.DecimalSI)}}}
	}
	for _, c := range []struct {
		node *corev1.Node
		want int
	}{
		{withLabel("8"), 8}, {withLabel("9223372036854775807"), 0}, {withLabel("65537"), 0}, {withLabel("-3"), 0},
		{withAllocatable(6), 6}, {withAllocatable(-1), 0}, {withAllocatable(1 << 40), 0},
	} {
		if got := nodeGPUs(c.node); got != c.want {
			t.Errorf("%v %v: %d GPUs, want %d", c.node.Labels, c.node.Status.Allocatable, got, c.want)
		}
	}
}
