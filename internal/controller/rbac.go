package controller

// The controller's permissions, one ClusterRole per purpose so that an
// installation binds only what it uses, and binds the namespaced ones
// (workloads, direct actuation) per watched namespace with RoleBindings
// when --watch-namespaces is set. `make generate` writes them to
// config/rbac/role.yaml and the Helm chart; docs/install.md explains each.
//
// wva-manager-role (ClusterRole, always bound cluster-wide): the metrics
// server's filter authenticates each scrape with a TokenReview and
// authorises it with a SubjectAccessReview.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
//
// wva-workloads-role (ClusterRole; bound cluster-wide, or in each watched
// namespace): read the variants and write their status, resolve and watch
// their Deployments, map pods to variants and mark the victims of a
// scale-down with pod-deletion-cost; record Events on the variants (each
// changed decision, holds).
// +kubebuilder:rbac:groups=llmd.ai,resources=variantautoscalings,verbs=get;list;watch,roleName=wva-workloads-role
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,roleName=wva-workloads-role
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,roleName=wva-workloads-role
// +kubebuilder:rbac:groups=llmd.ai,resources=variantautoscalings/status,verbs=get;update;patch,roleName=wva-workloads-role
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch,roleName=wva-workloads-role
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;patch,roleName=wva-workloads-role
//
// wva-direct-actuation-role (ClusterRole; bound like the workloads role,
// only when VariantAutoscalings may use spec.actuator: direct): scale the
// Deployments. Metrics-only actuation (HPA or KEDA) does not need it.
// +kubebuilder:rbac:groups=apps,resources=deployments/scale,verbs=get;update;patch,roleName=wva-direct-actuation-role
//
// Targets of other kinds than Deployment, one role per kind, bound like
// the workloads role only when VariantAutoscalings target that kind: read
// the workload and its /scale (the targets role), scale it (the
// direct-actuation role of the kind). A kind without a role here needs
// the same rules in a ClusterRole of the user's (docs/install.md).
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch,roleName=wva-statefulset-targets-role
// +kubebuilder:rbac:groups=apps,resources=statefulsets/scale,verbs=get,roleName=wva-statefulset-targets-role
// +kubebuilder:rbac:groups=apps,resources=statefulsets/scale,verbs=get;update;patch,roleName=wva-statefulset-direct-actuation-role
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get;list;watch,roleName=wva-leaderworkerset-targets-role
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets/scale,verbs=get,roleName=wva-leaderworkerset-targets-role
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets/scale,verbs=get;update;patch,roleName=wva-leaderworkerset-direct-actuation-role
//
// wva-node-reader-role (ClusterRole; bound only for the limited optimizer
// with WVA_CAPACITY_SOURCE=nodes): count the GPUs of the nodes.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list,roleName=wva-node-reader-role
//
// wva-manager-role (Role in the controller's namespace): its ConfigMaps
// (configuration, tuner state), Warning events on invalid ones, and the
// leader Lease.
// +kubebuilder:rbac:groups="",namespace=workload-variant-autoscaler-system,resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,namespace=workload-variant-autoscaler-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=workload-variant-autoscaler-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=workload-variant-autoscaler-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
//
// wva-metrics-reader (ClusterRole, for scrapers: bind it to Prometheus's
// service account): read /metrics and /tuner/params.
// +kubebuilder:rbac:urls=/metrics;/tuner/params,verbs=get,roleName=wva-metrics-reader
//
// wva-debug-reader (ClusterRole, for operators): also read /debug/snapshot,
// the last cycle's whole input (every watched namespace's models, pods,
// inventory and tuner settings) for `wva plan -f`. A scraper does not need
// it, so it is a role of its own.
// +kubebuilder:rbac:urls=/metrics;/tuner/params;/debug/snapshot,verbs=get,roleName=wva-debug-reader
