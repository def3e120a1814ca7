module github.com/llm-d-incubation/wva

go 1.26

require (
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	gonum.org/v1/gonum v0.17.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
)
