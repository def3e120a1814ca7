// Command wva is the SLO-driven autoscaler for LLM inference servers.
// Everything it does lives in internal/cli; this file only runs it.
package main

import (
	"os"

	"github.com/llm-d-incubation/wva/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
