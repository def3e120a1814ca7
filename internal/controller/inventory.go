package controller

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/registry"
)

// Inventory discovers how many accelerators of each type the cluster has,
// for the limited optimizer (the WVA paper §IV.D; the WVA GPU-limiter guide).
type Inventory interface {
	Discover(ctx context.Context, types []string) (map[string]int, error)
}

// InventoryFactory builds a capacity source. static is the inventory
// ConfigMap's content (accelerator type → count).
type InventoryFactory func(c client.Reader, static func() map[string]int) Inventory

var inventories = registry.New[InventoryFactory]("capacity source")

// RegisterInventory makes a capacity source selectable by name
// (WVA_CAPACITY_SOURCE). It panics on a duplicate.
func RegisterInventory(name string, f InventoryFactory) { inventories.Register(name, f) }

// newInventory builds a registered capacity source.
func newInventory(name string, c client.Reader, static func() map[string]int) (Inventory, error) {
	f, ok := inventories.Get(name)
	if !ok {
		return nil, fmt.Errorf("no capacity source %q (have %v)", name, inventories.Names())
	}
	return f(c, static), nil
}

func init() {
	RegisterInventory("nodes", func(c client.Reader, _ func() map[string]int) Inventory { return nodeInventory{c: c} })
	RegisterInventory("configmap", func(_ client.Reader, static func() map[string]int) Inventory { return staticInventory(static) })
}

// Node labels of NVIDIA's GPU feature discovery.
const (
	labelGPUProduct = "nvidia.com/gpu.product"
	labelGPUCount   = "nvidia.com/gpu.count"
	resourceGPU     = corev1.ResourceName("nvidia.com/gpu")
)

// nodeInventory counts GPUs on schedulable nodes, by product label. A
// product maps to the accelerator type whose name it contains (case
// insensitive, the longest name wins: "NVIDIA-H100-80GB-HBM3" is H100);
// products that match no type are counted under their own name.
type nodeInventory struct{ c client.Reader }

func (n nodeInventory) Discover(ctx context.Context, types []string) (map[string]int, error) {
	var nodes corev1.NodeList
	if err := n.c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := map[string]int{}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.Spec.Unschedulable {
			continue
		}
		product := node.Labels[labelGPUProduct]
		if product == "" {
			continue
		}
		t := productAccelerator(product, types)
		out[t] = min(out[t]+nodeGPUs(node), engine.MaxAcceleratorCount)
	}
	return out, nil
}

// maxNodeGPUs bounds what one node may report: far above any machine's,
// far below what could overflow a sum of nodes.
const maxNodeGPUs = 1 << 16

// nodeGPUs is a node's GPU count: its allocatable nvidia.com/gpu, else the
// count label; a count outside [0, maxNodeGPUs] (a broken label or device
// plugin) counts as none rather than as millions of GPUs.
func nodeGPUs(node *corev1.Node) int {
	if q, ok := node.Status.Allocatable[resourceGPU]; ok {
		if v := q.Value(); v >= 0 && v <= maxNodeGPUs {
			return int(v)
		}
		return 0
	}
	if v, err := strconv.Atoi(node.Labels[labelGPUCount]); err == nil && v > 0 && v <= maxNodeGPUs {
		return v
	}
	return 0
}

// productAccelerator maps a GPU product name to the accelerator type it names.
func productAccelerator(product string, types []string) string {
	sorted := append([]string(nil), types...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	p := strings.ToUpper(product)
	for _, t := range sorted {
		if t != "" && strings.Contains(p, strings.ToUpper(t)) {
			return t
		}
	}
	return product
}

type staticInventory func() map[string]int

func (s staticInventory) Discover(context.Context, []string) (map[string]int, error) {
	m := s()
	if len(m) == 0 {
		return nil, fmt.Errorf("the static inventory ConfigMap is empty or missing")
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}
