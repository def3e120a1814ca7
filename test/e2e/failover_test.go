//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// learnedParams is one entry of GET /tuner/params (internal/controller).
type learnedParams struct {
	Variant    string  `json:"variant"`
	Alpha      float64 `json:"alpha"`
	Beta       float64 `json:"beta"`
	Gamma      float64 `json:"gamma"`
	Updates    int     `json:"updates"`
	Rejections int     `json:"rejections"`
}

// learned fetches the variant's learned parameters from c.
func (w *opsWorld) learned(ctx context.Context, c *Controller) (*learnedParams, string) {
	code, body := w.scrape(ctx, c, "/tuner/params?namespace="+smokeNS+"&variant="+url.QueryEscape(smokeVA), w.token)
	if code != http.StatusOK {
		return nil, fmt.Sprintf("/tuner/params: %d %.200s", code, body)
	}
	var ps []learnedParams
	if err := json.Unmarshal([]byte(body), &ps); err != nil || len(ps) != 1 {
		return nil, fmt.Sprintf("/tuner/params: %v %.300s", err, body)
	}
	return &ps[0], fmt.Sprintf("%+v", ps[0])
}

// TestRestartRestoresLearning: with tuning on (hybrid mode, no transient
// delay) the controller learns the emulated server's parameters for some
// cycles and persists them in the ConfigMap wva-tuner-state; tuning is
// then switched off (tuner-config) so the parameters stand still, the
// controller is killed (SIGKILL) and a new one started: once it leads,
// /tuner/params shows the same parameters and update count, which it
// could only have read from the ConfigMap. Tuning on again, learning
// continues from there (the update count grows past it, not from zero).
func TestRestartRestoresLearning(t *testing.T) {
	w := newOpsWorld(t, opsOptions{config: map[string]string{"WVA_MODE": "hybrid", "WVA_TRANSIENT_DELAY": "0s"}})
	h := w.h
	c := w.startController("controller", true)
	w.waitPlanning(60 * time.Second)
	ctx := h.Ctx()
	const minUpdates = 3
	took := h.Eventually(fmt.Sprintf("%d tuner updates", minUpdates), 20*opsInterval+30*time.Second, func(ctx context.Context) (bool, string) {
		p, detail := w.learned(ctx, c)
		return p != nil && p.Updates >= minUpdates, detail
	})
	t.Logf("TIMING %d tuner updates %s after the first decision", minUpdates, took.Round(time.Millisecond))

	w.setConfig(ctx, "tuner-config", map[string]string{"tuning-enabled": "false"})
	// Frozen: the same parameters over two intervals, and persisted.
	var frozen *learnedParams
	h.Eventually("the learned parameters frozen and persisted", 10*opsInterval, func(ctx context.Context) (bool, string) {
		a, detail := w.learned(ctx, c)
		if a == nil {
			return false, detail
		}
		time.Sleep(2 * opsInterval)
		b, detail := w.learned(ctx, c)
		if b == nil || *a != *b {
			return false, "still moving: " + detail
		}
		cm, err := w.configMap(ctx, "wva-tuner-state")
		if err != nil {
			return false, err.Error()
		}
		rec := cm.Data[smokeNS+"."+smokeVA]
		frozen = b
		return strings.Contains(rec, fmt.Sprintf(`"updates":%d`, b.Updates)) || strings.Contains(rec, fmt.Sprintf(`"Updates":%d`, b.Updates)),
			fmt.Sprintf("%+v; stored %.300s", *b, rec)
	})
	t.Logf("learned before the restart: %+v", *frozen)

	c.Kill()
	killed := time.Now()
	c2 := w.startController("controller-restarted", false)
	var after *learnedParams
	took = h.Eventually("the restarted controller serves the learned parameters", opsLeaseDuration+6*opsInterval+10*time.Second,
		func(ctx context.Context) (bool, string) {
			p, detail := w.learned(ctx, c2)
			after = p
			return p != nil, detail
		})
	t.Logf("TIMING learned parameters served %s after the restart (%s after the kill)", took.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	if *after != *frozen {
		t.Fatalf("after the restart /tuner/params says %+v, before it %+v", *after, *frozen)
	}

	w.setConfig(ctx, "tuner-config", map[string]string{"tuning-enabled": "true"})
	h.Eventually("learning continues from the restored state", 20*opsInterval, func(ctx context.Context) (bool, string) {
		p, detail := w.learned(ctx, c2)
		return p != nil && p.Updates > frozen.Updates, detail
	})
}

// TestLeaderFailover: two controllers with leader election and a short
// lease: exactly one acts (the Lease has one holder, only one /metrics
// publishes decisions, over several intervals); the leader is killed
// (SIGKILL, no release) and the other takes the Lease within the lease
// duration plus a retry period, publishes decisions and keeps scaling (a
// raised minReplicas is applied to the Deployment).
func TestLeaderFailover(t *testing.T) {
	w := newOpsWorld(t, opsOptions{})
	h := w.h
	cs := []*Controller{w.startController("controller-a", true), w.startController("controller-b", false)}
	w.waitPlanning(60 * time.Second)
	leader, standby := w.oneActs(cs)
	holder, err := h.LeaderHolder(h.Ctx())
	if err != nil || holder == "" {
		t.Fatalf("Lease holder %q: %v", holder, err)
	}
	t.Logf("%s leads (Lease holder %s), %s stands by", leader.Name, holder, standby.Name)

	leader.Kill()
	killed := time.Now()
	took := h.Eventually("the standby takes the Lease", opsLeaseDuration+opsRetryPeriod+10*time.Second, func(ctx context.Context) (bool, string) {
		now, err := h.LeaderHolder(ctx)
		return err == nil && now != "" && now != holder, fmt.Sprintf("holder %q, %v", now, err)
	})
	t.Logf("TIMING the Lease taken over %s after the leader was killed (lease duration %s)", took.Round(time.Millisecond), opsLeaseDuration)
	h.Eventually(standby.Name+" decides", 4*opsInterval+10*time.Second, func(ctx context.Context) (bool, string) {
		va := w.va(ctx)
		ok, _, detail := w.publishesDecisions(ctx, standby)
		return ok && va.Status.DesiredOptimizedAlloc.LastRunTime.After(killed), detail + "; " + describeVA(va)
	})
	t.Logf("TIMING the new leader published a decision %s after the kill", time.Since(killed).Round(time.Millisecond))

	want := max(w.va(h.Ctx()).Status.DesiredOptimizedAlloc.NumReplicas, w.replicas(h.Ctx())) + 1
	w.setMinReplicas(h.Ctx(), want)
	took = w.waitScaled(fmt.Sprintf("the new leader scales to %d", want), want, 4*opsInterval+10*time.Second)
	t.Logf("TIMING the new leader applied a new decision %s after the demand changed", took.Round(time.Millisecond))
}

// oneActs waits until exactly one of two controllers publishes decisions,
// then checks for three intervals that it stays so; it returns the leader
// and the standby.
func (w *opsWorld) oneActs(cs []*Controller) (leader, standby *Controller) {
	h := w.h
	h.Eventually("exactly one controller publishes decisions", 6*opsInterval+10*time.Second, func(ctx context.Context) (bool, string) {
		a, _, da := w.publishesDecisions(ctx, cs[0])
		b, _, db := w.publishesDecisions(ctx, cs[1])
		return a != b, fmt.Sprintf("%s: %s; %s: %s", cs[0].Name, da, cs[1].Name, db)
	})
	leader, standby = cs[0], cs[1]
	if ok, _, _ := w.publishesDecisions(h.Ctx(), cs[1]); ok {
		leader, standby = cs[1], cs[0]
	}
	end := time.Now().Add(3 * opsInterval)
	for time.Now().Before(end) {
		ctx := h.Ctx()
		if ok, _, d := w.publishesDecisions(ctx, leader); !ok {
			w.t.Fatalf("the leader %s stopped publishing decisions: %s", leader.Name, d)
		}
		if ok, _, d := w.publishesDecisions(ctx, standby); ok {
			w.t.Fatalf("the standby %s publishes decisions too: %s", standby.Name, d)
		}
		time.Sleep(time.Second)
	}
	return leader, standby
}
