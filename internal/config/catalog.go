package config

import (
	"strings"

	"github.com/llm-d-incubation/wva/internal/engine"
)

const (
	acceleratorExample  = `{"name": "H100", "count": 1, "cost": 3.0, "memory": 80}`
	serviceClassExample = `{"name": "premium", "priority": 1, "ttft_ms": 500, "itl_ms": 50, "tps": 100}`
)

// acceleratorEntry is one value of the accelerator costs ConfigMap as
// written; nil fields were absent.
type acceleratorEntry struct {
	Name   *string  `json:"name"`
	Count  *int     `json:"count"`
	Cost   *float64 `json:"cost"`
	Memory *float64 `json:"memory"`
}

// ParseAccelerators parses the accelerator costs ConfigMap
// (AcceleratorsName): each key is an accelerator type, each value JSON or
// YAML such as {"name": "H100", "count": 1, "cost": 3.0, "memory": 80}.
// The result is keyed by the ConfigMap key; Name is the key.
func ParseAccelerators(data map[string]string) (map[string]Accelerator, error) {
	ps := problems{configMap: AcceleratorsName}
	out := make(map[string]Accelerator, len(data))
	for _, k := range sortedKeys(data) {
		if a, ok := parseAccelerator(&ps, k, data[k]); ok {
			out[k] = a
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseAccelerator(ps *problems, key, value string) (Accelerator, bool) {
	var e acceleratorEntry
	if !ps.check(key, decode(value, &e, acceleratorExample)) {
		return Accelerator{}, false
	}
	n := len(ps.list)
	checkName(ps, key, e.Name)
	a := Accelerator{Name: key, Count: 1}
	if e.Count != nil {
		a.Count = *e.Count
		if a.Count < 1 {
			ps.add(key, "count: want a whole number ≥ 1, got %d", a.Count)
		}
	}
	if e.Cost == nil {
		ps.add(key, "cost: required; want the cost of one %s, a number > 0", key)
	} else {
		a.Cost = *e.Cost
		ps.field(key, "cost", above(0).check(a.Cost))
	}
	if e.Memory != nil {
		a.MemoryGB = *e.Memory
		ps.field(key, "memory", nonNegative.check(a.MemoryGB))
	}
	return a, len(ps.list) == n
}

// serviceClassEntry is one value of the service classes ConfigMap as
// written; nil fields were absent.
type serviceClassEntry struct {
	Name       *string  `json:"name"`
	Priority   *int     `json:"priority"`
	TTFTMs     *float64 `json:"ttft_ms"`
	ITLMs      *float64 `json:"itl_ms"`
	TPS        *float64 `json:"tps"`
	Attainment *float64 `json:"attainment"`
}

// ParseServiceClasses parses the service classes ConfigMap
// (ServiceClassesName): each key is a class name, each value JSON or YAML
// such as {"name": "premium", "priority": 1, "ttft_ms": 500, "itl_ms": 50,
// "tps": 100}. Priority defaults to 1 (the highest); at least one of
// ttft_ms, itl_ms and tps must be > 0. An optional attainment in (0, 1)
// is the class's target share of requests within both targets (absent:
// the controller's WVA_ATTAINMENT).
func ParseServiceClasses(data map[string]string) (map[string]engine.ServiceClass, error) {
	ps := problems{configMap: ServiceClassesName}
	out := make(map[string]engine.ServiceClass, len(data))
	for _, k := range sortedKeys(data) {
		if c, ok := parseServiceClass(&ps, k, data[k]); ok {
			out[k] = c
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseServiceClass(ps *problems, key, value string) (engine.ServiceClass, bool) {
	var e serviceClassEntry
	if !ps.check(key, decode(value, &e, serviceClassExample)) {
		return engine.ServiceClass{}, false
	}
	n := len(ps.list)
	checkName(ps, key, e.Name)
	c := engine.ServiceClass{Priority: 1}
	if e.Priority != nil {
		c.Priority = *e.Priority
		if c.Priority < 1 {
			ps.add(key, "priority: want a whole number ≥ 1 (1 is the highest), got %d", c.Priority)
		}
	}
	c.TTFTMs = optionalTarget(ps, key, "ttft_ms", e.TTFTMs)
	c.ITLMs = optionalTarget(ps, key, "itl_ms", e.ITLMs)
	c.TPS = optionalTarget(ps, key, "tps", e.TPS)
	c.Attainment = optionalAttainment(ps, key, e.Attainment)
	if len(ps.list) == n && c.TTFTMs == 0 && c.ITLMs == 0 && c.TPS == 0 {
		ps.add(key, "no target; want at least one of ttft_ms, itl_ms and tps > 0")
	}
	return c, len(ps.list) == n
}

// optionalAttainment reads an attainment target in (0, 1); absent is 0
// (inherit).
func optionalAttainment(ps *problems, key string, p *float64) float64 {
	if p == nil {
		return 0
	}
	ps.field(key, "attainment", fraction(false).check(*p))
	return *p
}

// optionalTarget reads an SLO target ≥ 0; absent is 0 (no target).
func optionalTarget(ps *problems, key, field string, p *float64) float64 {
	if p == nil {
		return 0
	}
	ps.field(key, field, nonNegative.check(*p))
	return *p
}

// ParseInventory parses the static accelerator inventory ConfigMap
// (InventoryName) of limited mode: each key is an accelerator type, each
// value the number of accelerators of that type, a whole number ≥ 0.
func ParseInventory(data map[string]string) (map[string]int, error) {
	ps := problems{configMap: InventoryName}
	out := make(map[string]int, len(data))
	for _, k := range sortedKeys(data) {
		n, err := parseCount(strings.TrimSpace(data[k]), 0, engine.MaxAcceleratorCount, "accelerators")
		if ps.check(k, err) {
			out[k] = n
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}
