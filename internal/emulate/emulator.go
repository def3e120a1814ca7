package emulate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Options configure an Emulator; the zero value of each field is its
// documented default.
type Options struct {
	// Namespace limits the Deployments managed to one namespace ("" for
	// all).
	Namespace string
	// Selector picks the Deployments managed (default: every one in the
	// spec).
	Selector labels.Selector
	// Tick is the wall time between two rounds (default 100 ms).
	Tick time.Duration
	// Resync is the informers' resync period (default 30 s).
	Resync time.Duration
	// SDFile, if set, is the Prometheus file-SD file to keep.
	SDFile string
	// ProgressEvery is the wall time between two progress lines (default
	// 10 s; negative for none).
	ProgressEvery time.Duration
	// KeepPods leaves the pods and the Deployments' status as they are on
	// shutdown, instead of deleting the pods and zeroing the status.
	KeepPods bool
	// Clock is the wall clock (default: the real one).
	Clock clock.WithTicker
	// Log receives the progress lines (default: discarded).
	Log logr.Logger
	// Dynamic, when set, lets the emulator play LeaderWorkerSet's
	// controller for spec entries that name a LeaderWorkerSet (lws.go).
	Dynamic dynamic.Interface
}

func (o *Options) defaults() {
	if o.Selector == nil {
		o.Selector = labels.Everything()
	}
	if o.Tick == 0 {
		o.Tick = 100 * time.Millisecond
	}
	if o.Resync == 0 {
		o.Resync = 30 * time.Second
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Emulator plays the Deployment controller and the kubelet for the
// Deployments of a fleet: a Pod per emulated server, Deployment status.
type Emulator struct {
	opts      Options
	log       logr.Logger
	kc        kubernetes.Interface
	fleet     *Fleet
	deploys   appslisters.DeploymentLister
	podLister corelisters.PodLister
	factories []informers.SharedInformerFactory
	pods      map[int]*emuPod
	sd        sdWriter
	trigger   chan struct{}
	warned    map[string]bool
	accounts  map[string]bool // namespace/name of the service accounts known to exist
	gateway   *endpoint
	rsets     map[string]*appsv1.ReplicaSet // namespace/name of the ReplicaSets made
	lastErr   string
	lastErrAt time.Time
	lastN     map[int]int
	lwsStatus map[string][2]int64 // namespace/name → the status last written
}

// New prepares an emulator; Start (or Run) starts its informers.
func New(kc kubernetes.Interface, fleet *Fleet, opts Options) *Emulator {
	opts.defaults()
	e := &Emulator{opts: opts, log: opts.Log, kc: kc, fleet: fleet, pods: map[int]*emuPod{}, sd: sdWriter{path: opts.SDFile},
		trigger: make(chan struct{}, 1), warned: map[string]bool{}, accounts: map[string]bool{}, lastN: map[int]int{}, lwsStatus: map[string][2]int64{}, rsets: map[string]*appsv1.ReplicaSet{}}
	sel := opts.Selector.String()
	df := informers.NewSharedInformerFactoryWithOptions(kc, opts.Resync, informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = sel }))
	pf := informers.NewSharedInformerFactoryWithOptions(kc, opts.Resync, informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = EmulatedLabel + "=true" }))
	di := df.Apps().V1().Deployments()
	poke := func(any) {
		select {
		case e.trigger <- struct{}{}:
		default:
		}
	}
	_, _ = di.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke})
	e.deploys = di.Lister()
	e.podLister = pf.Core().V1().Pods().Lister()
	e.factories = []informers.SharedInformerFactory{df, pf}
	return e
}

// Start starts the informers, waits for their caches, starts the
// gateway's endpoint and deletes the pods a previous run left behind for
// the Deployments it manages (they have no server).
func (e *Emulator) Start(ctx context.Context) error {
	for _, f := range e.factories {
		f.Start(ctx.Done())
	}
	for _, f := range e.factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("syncing the %v cache", typ)
			}
		}
	}
	if e.gateway == nil {
		gw, err := serve("the gateway", gatewayHandler(e.fleet))
		if err != nil {
			return err
		}
		e.gateway = gw
		e.log.Info("gateway metrics", "address", gw.addr)
	}
	return e.deleteLeftovers(ctx)
}

// deleteLeftovers deletes the emulated pods of the Deployments this
// emulator manages that an earlier run left (they have no server).
func (e *Emulator) deleteLeftovers(ctx context.Context) error {
	bound, err := e.bind()
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	taken := map[int]bool{}
	for i, d := range bound {
		mine[string(d.UID)] = true
		taken[i] = true
	}
	sets, err := e.bindLWS(ctx, taken)
	if err != nil {
		return err
	}
	for _, l := range sets {
		mine[string(l.uid)] = true
	}
	left, err := e.podLister.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, p := range left {
		if !mine[p.Annotations[DeploymentAnnotation]] {
			continue
		}
		err := e.kc.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the leftover pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		e.log.Info("leftover pod deleted", "namespace", p.Namespace, "pod", p.Name)
	}
	return nil
}

// Run starts the emulator and runs a round every tick, and at once when a
// Deployment changes, until ctx ends; then it shuts down (Shutdown).
func (e *Emulator) Run(ctx context.Context) error {
	if err := e.Start(ctx); err != nil {
		return err
	}
	tick := e.opts.Clock.NewTicker(e.opts.Tick)
	defer tick.Stop()
	next := e.opts.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return e.Shutdown()
		case <-tick.C():
		case <-e.trigger:
		}
		if err := e.Step(ctx); err != nil && ctx.Err() == nil {
			e.logFailure(err)
		}
		if now := e.opts.Clock.Now(); e.opts.ProgressEvery > 0 && !now.Before(next) {
			e.progress()
			next = now.Add(e.opts.ProgressEvery)
		}
	}
}

// logFailure logs a failed round, the same error at most every 10 s.
func (e *Emulator) logFailure(err error) {
	now := e.opts.Clock.Now()
	if err.Error() == e.lastErr && now.Sub(e.lastErrAt) < 10*time.Second {
		return
	}
	e.lastErr, e.lastErrAt = err.Error(), now
	e.log.Error(err, "round failed; retrying every tick (the same error is logged every 10 s)")
}

func (e *Emulator) progress() {
	s := e.fleet.Summary()
	ready := 0
	for _, p := range e.pods {
		if p.ready {
			ready++
		}
	}
	e.log.Info("progress", "modelSeconds", fmt.Sprintf("%.1f", s.ModelSeconds), "pods", len(e.pods), "ready", ready,
		"arrived", s.Arrived, "completed", s.Completed, "failed", s.Failed, "gatewayWaiting", s.GatewayWaiting)
}

// Step runs one round: the fleet advances to the clock's time; each
// managed Deployment's servers follow its spec.replicas (after its pods'
// deletion costs), its pods and status follow its servers; the SD file
// follows the pods. It goes on past a failing Deployment and returns the
// errors joined.
func (e *Emulator) Step(ctx context.Context) error {
	e.fleet.Advance()
	bound, err := e.bind()
	if err != nil {
		return err
	}
	taken := map[int]bool{}
	for i := range bound {
		taken[i] = true
	}
	sets, err := e.bindLWS(ctx, taken)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range e.fleet.Targets() {
		if l := sets[t.Index]; l != nil {
			e.fleet.SetModelNamespace(t.ModelIndex, l.namespace)
			if last, ok := e.lastN[t.Index]; !ok || last != int(l.replicas) {
				e.log.Info("scaling", "leaderWorkerSet", t.Name, "namespace", l.namespace, "replicas", l.replicas)
				e.lastN[t.Index] = int(l.replicas)
			}
			errs = append(errs, e.stepLWS(ctx, l, t))
			continue
		}
		d := bound[t.Index]
		n := 0
		if d != nil {
			n = int(replicasOf(d.Spec.Replicas))
			e.fleet.SetModelNamespace(t.ModelIndex, d.Namespace)
		}
		if last, ok := e.lastN[t.Index]; !ok || last != n {
			e.log.Info("scaling", "deployment", t.Name, "namespace", nsOf(d), "replicas", n)
			e.lastN[t.Index] = n
		}
		// The pods' marks: their rotation now; on a scale-down the victims
		// are ranked by their deletion costs.
		down := n < len(e.podsOf(t))
		costs, out, err := e.podMarks(ctx, t, down)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.fleet.SetRotation(out)
		if !down {
			costs = nil
		}
		reps := e.fleet.Scale(t.Index, n, costs)
		if err := e.syncPods(ctx, d, t, reps); err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			errs = append(errs, e.syncStatus(ctx, d, reps))
		}
	}
	err = e.sd.write(renderSD(e.sdTargets()))
	return errors.Join(append(errs, err)...)
}

// bind matches the managed Deployments to the spec's targets (target
// index → Deployment); a Deployment not in the spec, or a second one for
// the same target, is skipped with a warning (once).
func (e *Emulator) bind() (map[int]*appsv1.Deployment, error) {
	ds, err := e.deploys.List(e.opts.Selector)
	if err != nil {
		return nil, err
	}
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].Namespace != ds[j].Namespace {
			return ds[i].Namespace < ds[j].Namespace
		}
		return ds[i].Name < ds[j].Name
	})
	bound := map[int]*appsv1.Deployment{}
	for _, d := range ds {
		key := d.Namespace + "/" + d.Name
		t, ok := e.fleet.Lookup(d.Namespace, d.Name)
		switch {
		case !ok:
			e.warnOnce(key, "Deployment not in the spec: not emulated", "deployment", key)
		case bound[t.Index] != nil:
			e.warnOnce(key, "Deployment matches a spec entry already bound: not emulated", "deployment", key,
				"boundTo", bound[t.Index].Namespace+"/"+bound[t.Index].Name)
		case d.DeletionTimestamp != nil:
		default:
			bound[t.Index] = d
		}
	}
	return bound, nil
}

func (e *Emulator) warnOnce(key, msg string, kv ...any) {
	if !e.warned[key+msg] {
		e.warned[key+msg] = true
		e.log.Info(msg, kv...)
	}
}

// Shutdown stops every server; unless KeepPods, it deletes their pods and
// sets the Deployments' status to no replicas. The SD file is emptied.
func (e *Emulator) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if e.opts.KeepPods {
		for _, p := range e.pods {
			if p.ep != nil {
				p.ep.close()
				p.ep = nil
			}
		}
	} else {
		errs = append(errs, e.deleteAll(ctx))
	}
	if e.gateway != nil {
		e.gateway.close()
		e.gateway = nil
	}
	err := e.sd.write(renderSD(nil))
	e.log.Info("emulator stopped", "keptPods", e.opts.KeepPods)
	return errors.Join(append(errs, err)...)
}

func (e *Emulator) deleteAll(ctx context.Context) error {
	var errs []error
	for _, p := range e.pods {
		errs = append(errs, e.deletePod(ctx, p))
	}
	bound, err := e.bind()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, d := range bound {
		errs = append(errs, e.writeStatus(ctx, d, 0, 0))
	}
	errs = append(errs, e.deleteReplicaSets(ctx))
	return errors.Join(errs...)
}

// podsOf lists the target's pods.
func (e *Emulator) podsOf(t Target) []*emuPod {
	var out []*emuPod
	for _, p := range e.pods {
		if p.target.Index == t.Index {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// replicasOf is a replica count, 1 when unset (the API's default).
func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func nsOf(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	return d.Namespace
}
