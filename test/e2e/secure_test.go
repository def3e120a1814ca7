//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSecureEndpoints: the controller's /metrics, /tuner/params and
// /debug/snapshot through the API server's authentication and
// authorisation, with ServiceAccount tokens: wva-metrics-reader gets
// /metrics and /tuner/params and a 403 on /debug/snapshot,
// wva-debug-reader gets all three, a token whose account has no role 403,
// no token 401. `wva plan -f` on the fetched snapshot reproduces the
// controller's desired replicas for the variant.
func TestSecureEndpoints(t *testing.T) {
	w := newOpsWorld(t, opsOptions{})
	h := w.h
	c := w.startController("controller", true)
	w.waitPlanning(60 * time.Second)
	debug, _ := h.ServiceAccountToken("monitoring", "debugger", "wva-debug-reader")
	none, _ := h.ServiceAccountToken("monitoring", "nobody", "")
	snapshot := "/debug/snapshot?namespace=" + smokeNS + "&model=" + url.QueryEscape(smokeModel)
	paths := []string{"/metrics", "/tuner/params", snapshot}
	want := []struct {
		who, token string
		codes      []int // per path
	}{
		{"wva-metrics-reader", w.token, []int{http.StatusOK, http.StatusOK, http.StatusForbidden}},
		{"wva-debug-reader", debug, []int{http.StatusOK, http.StatusOK, http.StatusOK}},
		{"a ServiceAccount without a role", none, []int{http.StatusForbidden, http.StatusForbidden, http.StatusForbidden}},
		{"anonymous", "", []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusUnauthorized}},
	}
	for _, x := range want {
		for i, p := range paths {
			code, body := w.scrape(h.Ctx(), c, p, x.token)
			if code != x.codes[i] {
				t.Errorf("GET %s as %s: %d, want %d (%.200q)", p, x.who, code, x.codes[i], body)
			} else {
				t.Logf("GET %s as %s: %d", p, x.who, code)
			}
		}
	}

	// wva plan on the snapshot: the same desired replicas as the decision
	// (both read again until they come from the same cycle).
	file := filepath.Join(h.Artifacts, "snapshot.json")
	h.Eventually("wva plan -f /debug/snapshot reproduces the decision", 10*opsInterval, func(ctx context.Context) (bool, string) {
		before := w.va(ctx).Status.DesiredOptimizedAlloc
		code, body := w.scrape(ctx, c, snapshot, debug)
		if code != http.StatusOK {
			return false, fmt.Sprintf("%s: %d %.200s", snapshot, code, body)
		}
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			return false, err.Error()
		}
		planned, detail := planDesired(ctx, h.Binary(), file, smokeVA)
		after := w.va(ctx).Status.DesiredOptimizedAlloc
		if planned < 0 || !before.LastRunTime.Equal(&after.LastRunTime) {
			return false, detail + "; a cycle ran meanwhile"
		}
		return int32(planned) == after.NumReplicas, fmt.Sprintf("wva plan: %s; the controller: %d (%s)", detail, after.NumReplicas, after.Reason)
	})
}

// planDesired runs `wva plan -f file -o json` and returns the variant's
// desired replicas (-1 when it cannot) and what it saw.
func planDesired(ctx context.Context, bin, file, variant string) (int, string) {
	out, err := exec.CommandContext(ctx, bin, "plan", "-f", file, "-o", "json").Output()
	if err != nil {
		return -1, fmt.Sprintf("wva plan -f %s: %v %.300s", file, err, out)
	}
	var plan struct {
		Variants []struct {
			Variant string `json:"variant"`
			Desired int    `json:"desired"`
			Reason  string `json:"reason"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		return -1, fmt.Sprintf("wva plan output: %v %.300s", err, out)
	}
	for _, v := range plan.Variants {
		if v.Variant == variant {
			return v.Desired, fmt.Sprintf("desired %d (%s)", v.Desired, v.Reason)
		}
	}
	return -1, fmt.Sprintf("no variant %s in %.300s", variant, out)
}
