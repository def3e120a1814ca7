// Command kube-controller-manager is the upstream controller manager, built
// here for the end-to-end suite (test/e2e), which runs only its
// horizontal-pod-autoscaler controller.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
