# WVA developer entry points. `make help` lists them.
GO      ?= go
BIN     := $(CURDIR)/bin
LINT    := $(BIN)/golangci-lint
# The linter's version is pinned by hack/tools/go.mod; a changed pin rebuilds it.
LINT_STAMP := $(BIN)/.golangci-lint.$(shell sed -n 's/^\tgithub.com\/golangci\/golangci-lint\/v2 \(v[^ ]*\).*/\1/p' hack/tools/go.mod)
CONTROLLER_GEN := $(BIN)/controller-gen
CG_STAMP := $(BIN)/.controller-gen.$(shell sed -n 's/^\tsigs.k8s.io\/controller-tools \(v[^ ]*\).*/\1/p' hack/controller-gen/go.mod)
FUZZTIME ?= 10s
# The scenario and snapshot fuzzers find new inputs faster than they can
# minimise them: minimising each would take most of FUZZTIME. Set
# FUZZMINIMIZE=60s to minimise a failing input.
FUZZMINIMIZE ?= 0s

# The release: one source, the VERSION file. `wva --version`, the image's tag
# and labels, the chart's appVersion and config/manager's image tag follow it
# (make verify checks them; make set-version V=x.y.z changes them all).
VERSION ?= $(shell cat $(CURDIR)/VERSION)
VERSION := $(VERSION)
VERSION_LDFLAGS := -X github.com/llm-d-incubation/wva/internal/cli.Version=$(VERSION)
# The image: built without Docker by hack/image (make image), for linux/$(ARCH).
# Pushed to $(REGISTRY)/wva:$(VERSION) when REGISTRY is set.
ARCH ?= amd64
REGISTRY ?=
IMAGE ?= $(if $(REGISTRY),$(REGISTRY)/wva,ghcr.io/llm-d-incubation/wva):$(VERSION)
IMAGE_TAR := $(BIN)/wva-image-$(VERSION).tar
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
# Every timestamp in the image; the last commit's time makes builds of a
# commit reproducible.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
DOCKER ?= docker

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/wva
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/wva ./cmd/wva

.PHONY: image
image: ## build the controller image without Docker into bin/wva-image-VERSION.tar (docker/podman load); REGISTRY=… also pushes it
	@mkdir -p $(BIN)/linux_$(ARCH)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -trimpath -buildvcs=false -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(BIN)/linux_$(ARCH)/wva ./cmd/wva
	cd hack/image && $(GO) build -o $(BIN)/image .
	$(BIN)/image build -binary $(BIN)/linux_$(ARCH)/wva -arch $(ARCH) -version $(VERSION) -revision "$(REVISION)" \
		-created "$(SOURCE_DATE_EPOCH)" -tag $(IMAGE) -out $(IMAGE_TAR) $(if $(REGISTRY),-push)

.PHONY: image-inspect
image-inspect: ## print the config and files of bin/wva-image-VERSION.tar
	cd hack/image && $(GO) build -o $(BIN)/image .
	$(BIN)/image inspect $(IMAGE_TAR)

.PHONY: docker-build
docker-build: ## build the image with Docker from the Dockerfile, as IMAGE (default ghcr.io/llm-d-incubation/wva:VERSION)
	$(DOCKER) build --platform linux/$(ARCH) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE) .

.PHONY: docker-push
docker-push: ## push IMAGE with Docker (after make docker-build)
	$(DOCKER) push $(IMAGE)

.PHONY: set-version
set-version: ## set the release everywhere: make set-version V=x.y.z (VERSION, the chart's version and appVersion, config/manager)
	@echo "$(V)" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$' || { echo "usage: make set-version V=x.y.z"; exit 1; }
	echo "$(V)" > VERSION
	sed -i 's/^version: .*/version: $(V)/; s/^appVersion: .*/appVersion: "$(V)"/' charts/wva/Chart.yaml
	sed -i 's/^\(  newTag: \).*/\1"$(V)"/' config/manager/kustomization.yaml
	sed -i 's|\(image: ghcr.io/llm-d-incubation/wva:\).*|\1$(V)|' config/manager/manager.yaml

.PHONY: run
run: ## run the main job: the simulator's default scenario (wva vs hpa vs the clairvoyant bound), results in ./wva-results
	$(GO) run ./cmd/wva simulate

SEEDS := 10
SCENARIOS := staircase stepped cost-tiering diurnal bursty shared-budget scale-from-zero mixed-slo long-outputs compute-bound production-chat flash-crowd hetero-fleet
EVAL_AUTOSCALERS := wva,hpa,keda,keda-queue,keda-saturation,keda-tokens,keda-slo,clairvoyant,oracle

# The evaluation's runs use one binary, built once, with GOGC=400: the
# simulator allocates many short-lived requests and results, and a larger
# heap target cuts its wall time by a quarter to a third (bursty's one-seed
# sweep: 7.8-9.8 s -> 5.9-6.1 s on 2 cores) at about 50 % more memory.
# Results do not depend on it.
EVAL_RUN := GOGC=400 $(BIN)/wva-eval

.PHONY: eval-binary
eval-binary:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/wva-eval ./cmd/wva

.PHONY: evaluate
evaluate: eval-binary ## rerun every shipped scenario with every autoscaler (seed 1, and SEEDS seeds) into docs/evaluation
	@for s in $(SCENARIOS); do \
		$(EVAL_RUN) simulate --scenario $$s --autoscalers $(EVAL_AUTOSCALERS) --out $(BIN)/evaluation/$$s > $(BIN)/evaluation-$$s.txt || exit 1; \
		mkdir -p docs/evaluation/$$s; \
		cp $(BIN)/evaluation-$$s.txt docs/evaluation/$$s/table.txt; \
		cp $(BIN)/evaluation/$$s/summary.csv $(BIN)/evaluation/$$s/sim-overlay.png $(BIN)/evaluation/$$s/sim-wva.png $(BIN)/evaluation/$$s/sim-hpa.png docs/evaluation/$$s/; \
		if [ -f $(BIN)/evaluation/$$s/classes.csv ]; then cp $(BIN)/evaluation/$$s/classes.csv docs/evaluation/$$s/; fi; \
		$(EVAL_RUN) simulate --scenario $$s --autoscalers $(EVAL_AUTOSCALERS) --repeat $(SEEDS) --out $(BIN)/evaluation/$$s-seeds > docs/evaluation/$$s/seeds.txt || exit 1; \
		cp $(BIN)/evaluation/$$s-seeds/seeds.csv docs/evaluation/$$s/; \
	done

# The same scenarios after WARMUP seconds of their initial rate
# (`wva simulate --warmup`): every autoscaler meets the steps after steady
# traffic, as in a deployment that has run for a while. About 8 minutes on
# 2 cores.
WARMUP := 1800
.PHONY: evaluate-warm
evaluate-warm: eval-binary ## rerun every shipped scenario after a WARMUP-s warm-up (SEEDS seeds) into docs/evaluation/warm
	@mkdir -p docs/evaluation/warm
	@for s in $(SCENARIOS); do \
		$(EVAL_RUN) simulate --scenario $$s --warmup $(WARMUP) --autoscalers $(EVAL_AUTOSCALERS) --repeat $(SEEDS) --out $(BIN)/evaluation-warm/$$s > docs/evaluation/warm/$$s.txt || exit 1; \
		cp $(BIN)/evaluation-warm/$$s/seeds.csv docs/evaluation/warm/$$s.csv; \
	done

# Three seeds: the sweep of every autoscaler on all 13 scenarios is 23
# CPU-minutes (about 12 minutes on 2 cores); FRONTIER_SEEDS=5 takes about
# half as long again.
FRONTIER_SEEDS := 3

.PHONY: frontiers
frontiers: eval-binary ## sweep every autoscaler's settings on every shipped scenario (FRONTIER_SEEDS seeds) into docs/evaluation/*/ (about 12 minutes on 2 cores)
	@for s in $(SCENARIOS); do \
		$(EVAL_RUN) simulate --scenario $$s --sweep --repeat $(FRONTIER_SEEDS) --out $(BIN)/frontiers/$$s > $(BIN)/frontiers-$$s.txt || exit 1; \
		mkdir -p docs/evaluation/$$s; \
		cp $(BIN)/frontiers-$$s.txt docs/evaluation/$$s/sweep.txt; \
		cp $(BIN)/frontiers/$$s/sweep.csv $(BIN)/frontiers/$$s/attainment.csv $(BIN)/frontiers/$$s/frontier.png docs/evaluation/$$s/; \
	done

# The calibration tables of docs/evaluation.md: WVA at attainment targets
# 0.90, 0.95 and 0.99 (its other settings at their defaults) and the
# clairvoyant bound sized for the same targets with no margin, on every
# shipped scenario. About 10 minutes on 2 cores.
CALIBRATION_SEEDS := 5
CALIBRATION_GRID := --grid wva.attainment=0.9,0.95,0.99 --grid wva.spareQuantile=0 --grid wva.ttftAttainment=0 \
	--grid wva.kvCacheThreshold=0.8 --grid wva.drainTimeoutSeconds=300 --grid clairvoyant.attainment=0.9,0.95,0.99 --grid clairvoyant.margin=0

.PHONY: calibration
calibration: eval-binary ## WVA and the clairvoyant bound at attainment targets 0.90, 0.95 and 0.99 on every shipped scenario (CALIBRATION_SEEDS seeds) into docs/evaluation/*/calibration.* (about 10 minutes on 2 cores)
	@for s in $(SCENARIOS); do \
		$(EVAL_RUN) simulate --scenario $$s --sweep --autoscalers wva,clairvoyant --repeat $(CALIBRATION_SEEDS) $(CALIBRATION_GRID) --out $(BIN)/calibration/$$s > $(BIN)/calibration-$$s.txt || exit 1; \
		mkdir -p docs/evaluation/$$s; \
		cp $(BIN)/calibration-$$s.txt docs/evaluation/$$s/calibration.txt; \
		cp $(BIN)/calibration/$$s/sweep.csv docs/evaluation/$$s/calibration.csv; \
	done

# Scenarios nobody tuned for (docs/evaluation.md): RANDOM_N random
# single-model scenarios drawn by hack/randscen from RANDOM_SEED on, every
# autoscaler over RANDOM_SEEDS seeds each; the scenario files and tables go
# to docs/evaluation/random/. About 25 minutes on 2 cores.
RANDOM_N := 24
RANDOM_SEED := 100
RANDOM_SEEDS := 3
RANDOM_AUTOSCALERS := wva,hpa,keda,keda-queue,keda-tokens,keda-slo,clairvoyant

.PHONY: random-scenarios
random-scenarios: eval-binary ## every autoscaler on RANDOM_N random scenarios (hack/randscen) into docs/evaluation/random/ (about 25 minutes on 2 cores)
	@rm -rf docs/evaluation/random && mkdir -p docs/evaluation/random
	$(GO) run ./hack/randscen -n $(RANDOM_N) -seed $(RANDOM_SEED) -out docs/evaluation/random
	@for f in docs/evaluation/random/*.yaml; do \
		$(EVAL_RUN) simulate -f $$f --autoscalers $(RANDOM_AUTOSCALERS) --repeat $(RANDOM_SEEDS) --no-files -o json > $${f%.yaml}.json || exit 1; \
	done
	$(GO) run ./hack/randscen -summarize docs/evaluation/random > docs/evaluation/random/summary.md

.PHONY: admission
admission: ## rerun docs/admission.md's experiments (seed 003's isolation matrix, admission with autoscaling on a load step) into $(BIN)/admission-* (about 1.5 minutes on 2 cores)
	@mkdir -p $(BIN)
	$(GO) run ./cmd/wva simulate --scenario admission-matrix --matrix --out $(BIN)/admission-matrix
	$(GO) run ./cmd/wva simulate --scenario admission-step --matrix --out $(BIN)/admission-step

.PHONY: test
test: test-deps k8s crds gateway-test ## run every test, with the race detector (builds the control plane for envtest when missing)
	$(GO) test -race -count=1 -timeout 30m ./...

.PHONY: gateway-test
gateway-test: ## tidy check, vet and tests of gateway/, the endpoint picker with WVA's admission plugins (a module of its own; docs/gateway.md)
	cd gateway && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -race -count=1 ./...

K8S_VERSION := v1.36.3
K8S_VERSION_FLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean

.PHONY: k8s
k8s: $(BIN)/k8s/kube-apiserver $(BIN)/k8s/etcd ## build a real kube-apiserver and etcd for envtest (once; about 3 minutes)

$(BIN)/k8s/kube-apiserver $(BIN)/k8s/etcd: hack/k8s/go.mod hack/k8s/go.sum
	@mkdir -p $(BIN)/k8s
	@echo "building kube-apiserver and etcd from the module proxy into $(BIN)/k8s (first run takes a few minutes)"
	cd hack/k8s && $(GO) build -ldflags "$(K8S_VERSION_FLAGS)" -o $(BIN)/k8s/kube-apiserver ./kube-apiserver && $(GO) build -o $(BIN)/k8s/etcd ./etcd

# The end-to-end suite's extra components (docs/e2e.md), kept out of
# `make k8s` because `make test` does not need them: kube-controller-manager
# (only its HPA controller runs in e2e; about 5 minutes and 136 MB on 2
# cores after make k8s) and prometheus-adapter v0.12.0 (hack/adapter, its
# own module; about 6 minutes and 89 MB with a cold module cache).
KCM := $(BIN)/k8s/kube-controller-manager
ADAPTER := $(BIN)/k8s/prometheus-adapter

.PHONY: k8s-kcm
k8s-kcm: $(KCM) ## build kube-controller-manager (v1.36.3, for the real HPA controller of make e2e) into bin/k8s

$(KCM): hack/k8s/go.mod hack/k8s/go.sum
	@mkdir -p $(BIN)/k8s
	@echo "building kube-controller-manager from the module proxy into $(BIN)/k8s (about 5 minutes the first time)"
	cd hack/k8s && $(GO) build -ldflags "$(K8S_VERSION_FLAGS)" -o $(KCM) ./kube-controller-manager

.PHONY: adapter
adapter: $(ADAPTER) ## build prometheus-adapter (v0.12.0, the external metrics API of make e2e) into bin/k8s

$(ADAPTER): hack/adapter/go.mod hack/adapter/go.sum
	@mkdir -p $(BIN)/k8s
	@echo "building prometheus-adapter from the module proxy into $(BIN)/k8s (about 6 minutes the first time)"
	cd hack/adapter && $(GO) build -o $(ADAPTER) sigs.k8s.io/prometheus-adapter/cmd/adapter

# KEDA v2.21.0, the version hack/crds pins (its source zip checked against
# hack/crds/go.sum), built inside its own module so that its go.mod and
# go.sum choose and check every dependency: the operator (ScaledObject
# controller, scalers, gRPC metrics service) and the metrics server
# (external.metrics.k8s.io), with every CRD of the release. About
# 1.3 GB of modules and 20 minutes on 2 cores the first time.
KEDA_OPERATOR := $(BIN)/k8s/keda-operator

.PHONY: keda
keda: $(KEDA_OPERATOR) ## build KEDA's operator and metrics server (v2.21.0, pinned by hack/crds) and its CRDs into bin/k8s, for make e2e's KEDA mode

$(KEDA_OPERATOR): hack/crds/go.mod hack/crds/go.sum
	@mkdir -p $(BIN)/k8s
	@echo "building KEDA's operator and metrics server from the module proxy into $(BIN)/k8s (about 20 minutes the first time)"
	@cd hack/crds && \
	keda=$$($(GO) mod download -json github.com/kedacore/keda/v2 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$$/\1/p') && \
	v=$$(sed -n 's/^[[:space:]]*github.com\/kedacore\/keda\/v2 \(v[^ ]*\).*/\1/p' go.mod) && \
	test -n "$$keda" && test -n "$$v" || { echo "go mod download of KEDA failed in hack/crds"; exit 1; }; \
	rm -rf $(BIN)/k8s/keda-crds && mkdir -p $(BIN)/k8s/keda-crds && install -m 0644 "$$keda"/config/crd/bases/*.yaml $(BIN)/k8s/keda-crds/ && \
	cd "$$keda" && \
	$(GO) build -ldflags "-X=github.com/kedacore/keda/v2/version.Version=$$v" -o $(BIN)/k8s/keda-adapter ./cmd/adapter && \
	$(GO) build -ldflags "-X=github.com/kedacore/keda/v2/version.Version=$$v" -o $(KEDA_OPERATOR) ./cmd/operator

.PHONY: e2e
e2e: test-deps k8s crds k8s-kcm adapter keda ## run the end-to-end suite (test/e2e, the e2e tag): real control plane, Prometheus, HPA controller, adapter, KEDA and the controller binary; logs in bin/e2e-artifacts or the E2E_ARTIFACTS folder
	$(GO) test -tags e2e -count=1 ./test/e2e/ -v -timeout 30m

# Third-party CRDs the samples are validated against (test/manifests),
# from the source zips of the modules pinned by hack/crds/go.mod (checked
# against its go.sum): KEDA's config/crd/bases and the Prometheus operator's
# example/prometheus-operator-crd. About 7 MB of zips, downloaded once.
CRDS := $(BIN)/crds
KEDA_CRDS := keda.sh_scaledobjects.yaml keda.sh_triggerauthentications.yaml
PROMOP_CRDS := monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_podmonitors.yaml monitoring.coreos.com_prometheusrules.yaml

.PHONY: crds
crds: $(CRDS)/.stamp ## download KEDA's, the Prometheus operator's and LeaderWorkerSet's CRDs (pinned by hack/crds) into bin/crds

$(CRDS)/.stamp: hack/crds/go.mod hack/crds/go.sum
	@rm -rf $(CRDS) && mkdir -p $(CRDS)
	@cd hack/crds && \
	keda=$$($(GO) mod download -json github.com/kedacore/keda/v2 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$$/\1/p') && \
	promop=$$($(GO) mod download -json github.com/prometheus-operator/prometheus-operator | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$$/\1/p') && \
	lws=$$($(GO) mod download -json sigs.k8s.io/lws | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$$/\1/p') && \
	test -n "$$keda" && test -n "$$promop" && test -n "$$lws" || { echo "go mod download failed in hack/crds"; exit 1; }; \
	install -m 0644 "$$lws/config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml" $(CRDS)/ || exit 1; \
	for f in $(KEDA_CRDS); do install -m 0644 "$$keda/config/crd/bases/$$f" $(CRDS)/ || exit 1; done; \
	for f in $(PROMOP_CRDS); do install -m 0644 "$$promop/example/prometheus-operator-crd/$$f" $(CRDS)/ || exit 1; done
	@touch $@
	@echo "CRDs in $(CRDS):" $$(cd $(CRDS) && ls *.yaml)

.PHONY: test-deps
test-deps: ## install what the tests run against (Debian's prometheus server)
	@hack/install-prometheus.sh

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME (default 10s)
	$(GO) test -run '^$$' -fuzz '^FuzzQueue$$' -fuzztime $(FUZZTIME) ./internal/queueing
	$(GO) test -run '^$$' -fuzz '^FuzzAnalyzer$$' -fuzztime $(FUZZTIME) ./internal/queueing
	$(GO) test -run '^$$' -fuzz '^FuzzScenario$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./internal/sim
	$(GO) test -run '^$$' -fuzz '^FuzzSnapshot$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./internal/cli
	$(GO) test -run '^$$' -fuzz '^FuzzParsers$$' -fuzztime $(FUZZTIME) ./internal/config
	$(GO) test -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME) ./internal/drain
	$(GO) test -run '^$$' -fuzz '^FuzzIndex$$' -fuzztime $(FUZZTIME) ./internal/admission
	$(GO) test -run '^$$' -fuzz '^FuzzPredictive$$' -fuzztime $(FUZZTIME) ./internal/admission
	$(GO) test -run '^$$' -fuzz '^FuzzCalibrator$$' -fuzztime $(FUZZTIME) ./internal/admission
	cd gateway && $(GO) test -run '^$$' -fuzz '^FuzzParameters$$' -fuzztime $(FUZZTIME) ./predictive

.PHONY: study
study: ## rerun the tuner convergence study into docs/tuner-study
	$(GO) run ./cmd/wva tune study --out docs/tuner-study

.PHONY: validate-capacity
validate-capacity: ## the capacity model against the simulator's measured capacity, every case (about an hour on 2 cores; docs/queueing.md §7)
	WVA_VALIDATE=1 WVA_VALIDATE_OUT=$(BIN)/capacity-validation.md $(GO) test ./internal/sim/capmodel -run TestCapacityValidation -count=1 -v -timeout 4h

.PHONY: bench
bench: ## run the benchmarks (figures in docs/queueing.md)
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: lint
lint: $(LINT_STAMP) ## run golangci-lint (built from hack/tools on first use)
	$(LINT) run ./...
	$(LINT) run --build-tags e2e ./test/e2e/...

$(LINT_STAMP): hack/tools/go.mod hack/tools/go.sum
	@mkdir -p $(BIN)
	@echo "building golangci-lint from hack/tools (first run takes a few minutes)"
	cd hack/tools && $(GO) build -o $(LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@rm -f $(BIN)/.golangci-lint.* && touch $@

$(CG_STAMP): hack/controller-gen/go.mod hack/controller-gen/go.sum
	@mkdir -p $(BIN)
	cd hack/controller-gen && $(GO) build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen
	@rm -f $(BIN)/.controller-gen.* && touch $@

.PHONY: generate
generate: $(CG_STAMP) ## regenerate deep copies, the CRD and the RBAC role from the Go markers (one source for kustomize and Helm)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:maxDescLen=400 paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=wva-manager-role paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	@cp config/crd/bases/llmd.ai_variantautoscalings.yaml charts/wva/files/
	@{ echo "# Generated by make generate from config/rbac/role.yaml (the +kubebuilder:rbac markers). Do not edit."; \
	  echo "# Each role is named after the release (wva.fullname: wva-… for the release wva), so releases do not collide."; \
	  sed -e 's/namespace: workload-variant-autoscaler-system/namespace: {{ .Release.Namespace }}/' \
	    -e 's/^  name: wva-/  name: {{ include "wva.fullname" . }}-/' \
	    -e '/^metadata:$$/a\  labels: {{- include "wva.labels" . | nindent 4 }}' config/rbac/role.yaml; } > charts/wva/templates/rbac-generated.yaml

.PHONY: chart-docs
chart-docs: ## regenerate the values table of charts/wva/README.md from values.yaml and values.schema.json (a test fails when it is stale)
	$(GO) run ./hack/chartdocs -w

.PHONY: verify-version
verify-version: ## fail unless the chart's appVersion and config/manager's image tag equal the VERSION file
	@v=$$(cat VERSION); \
	app=$$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/wva/Chart.yaml); \
	tag=$$(sed -n 's/^  newTag: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' config/manager/kustomization.yaml); \
	img=$$(sed -n 's|^ *image: ghcr.io/llm-d-incubation/wva:\(.*\)$$|\1|p' config/manager/manager.yaml); \
	test "$$app" = "$$v" || { echo "charts/wva/Chart.yaml appVersion $$app != VERSION $$v (make set-version V=$$v)"; exit 1; }; \
	test "$$tag" = "$$v" || { echo "config/manager/kustomization.yaml newTag $$tag != VERSION $$v (make set-version V=$$v)"; exit 1; }; \
	test "$$img" = "$$v" || { echo "config/manager/manager.yaml image tag $$img != VERSION $$v (make set-version V=$$v)"; exit 1; }

.PHONY: verify
verify: generate verify-version ## fail if formatting, go.mod/go.sum or generated files are not up to date
	@git diff --exit-code -- api config charts || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts)" || { git status --porcelain -- api config charts; echo "generated files are not committed"; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) mod tidy -diff
	cd hack/tools && $(GO) mod tidy -diff
	cd hack/controller-gen && $(GO) mod tidy -diff
	cd hack/image && $(GO) mod tidy -diff
	cd hack/k8s && $(GO) mod tidy -diff
	cd hack/adapter && $(GO) mod tidy -diff

.PHONY: clean
clean: ## remove build outputs
	rm -rf $(BIN)
