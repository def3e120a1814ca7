// Package baselines holds the autoscalers the simulator compares, each
// registered by name into package sim's registry from an init in its own
// file: WVA (the controller's decision engine on the simulated cluster),
// the Kubernetes HPA, KEDA, llm-d's four KEDA + endpoint-picker paths
// (queue, saturation, token backlog, SLO-aware), and the two bounds that
// know the future (clairvoyant, sized by the simulator's own measured
// capacity; oracle). static:N, the fixed fleet the simulator itself uses,
// stays in package sim. A program that runs autoscalers by name imports
// this package (package experiment and the CLI do).
package baselines
