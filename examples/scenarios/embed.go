// Package scenarios embeds the shipped simulation scenarios, so that
// `wva simulate` runs them without a file. Each YAML file here is a
// commented example of the scenario schema (docs/evaluation.md).
package scenarios

import "embed"

// FS holds every *.yaml scenario of this folder.
//
//go:embed *.yaml
var FS embed.FS
