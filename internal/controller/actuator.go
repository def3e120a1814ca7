package controller

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/registry"
)

// Actuator brings a decision to the workload (the WVA paper §IV.E). Apply is
// called once per cycle for each variant with a decision; it reports
// whether the target now runs the desired count.
type Actuator interface {
	Apply(ctx context.Context, va *wvav1.VariantAutoscaling, target *workload, s Scaling) (Actuation, error)
}

// Scaling is the decision an actuator applies.
type Scaling struct {
	Desired int32
	// Victims are the pods the engine would remove first on a scale-down
	// (least loaded, never saturated), in order.
	Victims []string
}

// Actuation is what an actuator did.
type Actuation struct {
	// Patched is true when the actuator changed the target.
	Patched bool
	// Complete is true when the target has the desired replicas, ready.
	Complete bool
	// Message explains an incomplete actuation.
	Message string
}

// ActuatorFactory builds an actuator with the controller's client.
type ActuatorFactory func(c client.Client) Actuator

var actuators = registry.New[ActuatorFactory]("actuator")

// RegisterActuator makes an actuation strategy selectable by name (the
// VariantAutoscaling's spec.actuator). It panics on a duplicate.
func RegisterActuator(name string, f ActuatorFactory) { actuators.Register(name, f) }

// newActuators builds every registered actuator.
func newActuators(c client.Client) map[string]Actuator {
	out := map[string]Actuator{}
	for name, f := range actuators.All() {
		out[name] = f(c)
	}
	return out
}

// actuatorNames lists the registered actuators.
func actuatorNames() []string { return actuators.Names() }

func init() {
	RegisterActuator(wvav1.ActuatorMetricsOnly, func(c client.Client) Actuator { return metricsOnly{marker: newVictimMarker(c)} })
	RegisterActuator(wvav1.ActuatorDirect, func(c client.Client) Actuator { return direct{c: c, marker: newVictimMarker(c)} })
}

// metricsOnly leaves the scaling to HPA or KEDA, which read
// inferno_desired_replicas; it only observes whether they applied it. On
// a scale-down it marks the victims, so that the ReplicaSet controller
// removes them when HPA or KEDA lowers the replica count.
type metricsOnly struct{ marker *victimMarker }

func (a metricsOnly) Apply(ctx context.Context, va *wvav1.VariantAutoscaling, d *workload, s Scaling) (Actuation, error) {
	res := observe(d, s.Desired)
	if err := a.marker.update(ctx, va, d, s); err != nil {
		res.Message = joinMessage(res.Message, err.Error())
	}
	return res, nil
}

// direct patches the target's /scale subresource. Before a scale-down it
// marks the victims with the lowest pod-deletion-cost.
type direct struct {
	c      client.Client
	marker *victimMarker
}

func (a direct) Apply(ctx context.Context, va *wvav1.VariantAutoscaling, d *workload, s Scaling) (Actuation, error) {
	desired := bounded(va, s.Desired)
	current := d.SpecReplicas
	markErr := a.marker.update(ctx, va, d, Scaling{Desired: desired, Victims: s.Victims})
	if current == desired {
		res := observe(d, desired)
		if markErr != nil {
			res.Message = joinMessage(res.Message, markErr.Error())
		}
		return res, nil
	}
	scale, err := getScale(ctx, a.c, d.object())
	if err != nil {
		return Actuation{}, fmt.Errorf("reading the scale of %s in %s: %w", d, d.Namespace, err)
	}
	scale.Spec.Replicas = desired
	if err := updateScale(ctx, a.c, d.object(), scale); err != nil {
		return Actuation{}, fmt.Errorf("scaling %s in %s to %d: %w", d, d.Namespace, desired, err)
	}
	res := Actuation{Patched: true, Message: fmt.Sprintf("scaled %s to %d replicas", d, desired)}
	if markErr != nil {
		res.Message = joinMessage(res.Message, markErr.Error())
	}
	return res, nil
}

func joinMessage(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// bounded applies the VariantAutoscaling's bounds once more (the engine
// already did; this guards the workload against a stale decision).
func bounded(va *wvav1.VariantAutoscaling, n int32) int32 {
	if va.Spec.MinReplicas != nil && n < *va.Spec.MinReplicas {
		n = *va.Spec.MinReplicas
	}
	if va.Spec.MaxReplicas != nil && n > *va.Spec.MaxReplicas {
		n = *va.Spec.MaxReplicas
	}
	return max(n, 0)
}

func observe(d *workload, desired int32) Actuation {
	spec, ready := d.SpecReplicas, d.ReadyReplicas
	switch {
	case spec == desired && ready == desired:
		return Actuation{Complete: true}
	case spec == desired:
		return Actuation{Message: fmt.Sprintf("%d of %d replicas ready", ready, desired)}
	default:
		return Actuation{Message: fmt.Sprintf("%s wants %d replicas, WVA %d", strings.ToLower(d.Kind), spec, desired)}
	}
}
