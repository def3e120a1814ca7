// Package controller is WVA's Kubernetes controller: the manager (leader
// election, caches, probes, the metrics and tuner endpoints), the planner
// loop that runs the decision engine on the leader every interval, the
// reconciler that turns its decisions into VariantAutoscaling status, the
// ConfigMap watch with hot reload, the tuner state store, the actuators
// (metrics-only, direct /scale), capacity discovery for limited mode and
// the scale-from-zero loop (the WVA paper §IV; docs/controller.md).
//
// docs/controller.md describes the design; docs/operations.md how to run it.
package controller
