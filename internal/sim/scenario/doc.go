// Package scenario is the simulator's input: the schema of a scenario file
// (models, their variants and workloads, the gateway, the metrics pipeline,
// every autoscaler's settings, an experiment matrix), its defaults, its
// validation with the size limits that bound a run, the parsing of YAML and
// JSON, traces and token files, and the workload's distributions (arrival
// rates over time, token counts). It imports nothing of the simulator that
// runs it: the names of the autoscalers a scenario may list come from the
// simulator's registry through NameRegistry.
package scenario
