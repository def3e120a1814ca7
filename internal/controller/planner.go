package controller

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/metrics"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// sourceFactory builds the metrics source for the current main
// configuration (called again when it changes).
type sourceFactory func(m config.Main) (collector.Source, error)

// planner runs the optimisation cycle: it reads every VariantAutoscaling
// and its Deployment, collects the pods' metrics, runs the engine, hands
// each decision to the variant's actuator, publishes the metrics, persists
// the tuner state, and leaves the decisions in the cache for the
// reconciler. Only the leader runs it.
type planner struct {
	Client    client.Client // reads VariantAutoscalings and Deployments; patches /scale
	Reader    client.Reader // reads pods and nodes (uncached)
	Clock     clock.Clock
	Config    *configState
	Engine    *engine.Engine
	Store     *configMapStore
	Emitter   *metrics.Emitter
	Cache     *decisionCache
	Actuators map[string]Actuator
	Sources   sourceFactory
	// Notify is called for each VariantAutoscaling after a cycle, to
	// reconcile its status (nil: nobody is told).
	Notify func(types.NamespacedName)
	Log    logr.Logger
	// Announcer records each changed decision as an Event on its
	// VariantAutoscaling and a log line (nil: nothing is announced).
	Announcer *announcer
	// Replays keeps each model's last snapshot for /debug/snapshot (nil:
	// none is kept).
	Replays *replayStore
	// ListOptions restrict the VariantAutoscalings planned (tests; in the
	// manager the cache's namespaces do).
	ListOptions []client.ListOption

	srcMu         sync.Mutex
	source        collector.Source
	sourceFor     *config.Main
	lastInventory map[string]int
	builder       snapshot.Builder
	// drains remembers, per variant, whether its pods may carry drain
	// marks (drain.go): a variant known to have none is not listed again
	// for the drain until it scales down.
	drains drainMemory
	// Wake makes the loop run a cycle now and restart its period (a
	// configuration change); Surge makes it run an extra cycle now, the
	// periodic one keeping its time (the fast loop's surge check).
	Wake, Surge chan struct{}
}

// run runs cycles every GLOBAL_OPT_INTERVAL until ctx ends. It first
// restores the tuner state persisted by the previous leader. The manager
// runs it only on the leader (setup.go: a manager.RunnableFunc, which
// needs leader election).
func (p *planner) run(ctx context.Context) error {
	if skipped, err := p.Store.load(ctx); err != nil {
		p.Log.Error(err, "restoring tuner state; starting from cold")
	} else if len(skipped) > 0 {
		p.Log.Info("tuner state entries skipped", "entries", skipped)
	}
	cycle := func() {
		if err := p.cycle(ctx); err != nil && ctx.Err() == nil {
			p.Log.Error(err, "optimisation cycle")
		}
	}
	for {
		cycle()
		interval := p.Config.settings().Main.Interval
		if interval <= 0 {
			interval = time.Minute
		}
		t := p.Clock.NewTimer(interval)
	wait:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
				break wait
			case <-p.Wake:
				t.Stop()
				break wait
			case <-p.Surge:
				cycle() // an extra cycle: the periodic one keeps its time
			}
		}
	}
}

// variant is one VariantAutoscaling during a cycle.
type variant struct {
	va     *wvav1.VariantAutoscaling
	target *workload
	key    types.NamespacedName
	pods   []string // names of its pods that report metrics (this cycle)
	// listErr is why its pods could not be listed (this cycle), if so.
	listErr error
	// podList is its pods as this cycle listed them (nil when not
	// listed), for the drain to reuse.
	podList []corev1.Pod
	// settings are its server settings as this cycle resolved them.
	settings resolvedSettings
}

// podOwners maps pod names to the VariantAutoscaling whose Deployment
// selects them (when no pod label names the variant), with each pod's
// ready time.
type podInfo struct {
	variant string
	created time.Time
	ready   time.Time
	// group names the pod's replica when a replica is several pods (a
	// LeaderWorkerSet's group index), else "".
	group string
}
