package admission

import (
	"math"
	"testing"
)

func TestAlwaysAdmit(t *testing.T) {
	for _, c := range []Class{Critical, Standard, Sheddable} {
		d := AlwaysAdmit{}.Decide(0, Request{Class: c}, nil)
		if !d.Admit || d.Reason != ReasonAlways || d.Class != c || d.Instance != -1 {
			t.Errorf("%v: %+v", c, d)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	b, err := NewTokenBucket(BucketConfig{Rate: 2, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	std := Request{Class: Standard}
	steps := []struct {
		name  string
		now   float64
		req   Request
		admit bool
		why   Reason
	}{
		{"a full bucket admits", 10, std, true, ReasonToken},
		{"the burst's second token", 10, std, true, ReasonToken},
		{"empty", 10, std, false, ReasonNoToken},
		{"critical is admitted without a token", 10, Request{Class: Critical}, true, ReasonCritical},
		{"0.5 s at 2/s refills one token", 10.5, std, true, ReasonToken},
		{"0.1 s refills 0.2", 10.6, std, false, ReasonNoToken},
		{"a clock going backwards refills nothing", 5, std, false, ReasonNoToken},
		{"a NaN clock refills nothing", math.NaN(), std, false, ReasonNoToken},
		{"a long pause refills the burst, no more", 100, std, true, ReasonToken},
		{"second", 100, std, true, ReasonToken},
		{"third is over the burst", 100, std, false, ReasonNoToken},
	}
	for _, s := range steps {
		d := b.Decide(s.now, s.req, nil)
		if d.Admit != s.admit || d.Reason != s.why {
			t.Errorf("%s: got %v", s.name, d)
		}
	}
}

func TestTokenBucketCriticalSpendsTokens(t *testing.T) {
	b, err := NewTokenBucket(BucketConfig{Rate: 1}) // burst 1
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Decide(0, Request{Class: Critical}, nil); !d.Admit {
		t.Fatalf("critical: %v", d)
	}
	if d := b.Decide(0, Request{Class: Sheddable}, nil); d.Admit {
		t.Errorf("the critical request took the only token, yet: %v", d)
	}
}

func TestSLOGated(t *testing.T) {
	// Queues of 2, 7 and 12 waiting (spread over priorities: the gate counts
	// all of them).
	fleet := fleetOf(instance(0.01).waiting(0, 1).waiting(-1, 1), instance(0.01).waiting(0, 7), instance(0.01).waiting(5, 12))
	cases := []struct {
		name  string
		cfg   GatedConfig
		req   Request
		fleet []Instance
		admit bool
		why   Reason
		depth float64
		at    int
	}{
		{"min: sheddable, shortest queue 2 < 5", GatedConfig{}, Request{Class: Sheddable}, fleet, true, ReasonQueueBelow, 2, 0},
		{"min: a threshold of 2 is reached", GatedConfig{SheddableThreshold: 2}, Request{Class: Sheddable}, fleet, false, ReasonQueueAtLimit, 2, 0},
		{"max: the longest queue 12 ≥ 10 sheds standard", GatedConfig{Fleet: FleetMax}, Request{Class: Standard}, fleet, false, ReasonQueueAtLimit, 12, 2},
		{"max: 12 < 13", GatedConfig{Fleet: FleetMax, StandardThreshold: 13}, Request{Class: Standard}, fleet, true, ReasonQueueBelow, 12, 2},
		{"critical is never rejected", GatedConfig{Fleet: FleetMax, StandardThreshold: 1}, Request{Class: Critical}, fleet, true, ReasonCritical, 0, -1},
		{"an unknown class is treated as critical", GatedConfig{SheddableThreshold: 1}, Request{Class: 7}, fleet, true, ReasonCritical, 0, -1},
		{"an empty fleet admits (the gateway holds)", GatedConfig{}, Request{Class: Sheddable}, nil, true, ReasonNoInstance, 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := NewSLOGated(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			d := g.Decide(0, c.req, c.fleet)
			if d.Admit != c.admit || d.Reason != c.why || d.Estimate != c.depth || d.Instance != c.at {
				t.Errorf("got %v (%+v)", d, d)
			}
		})
	}
}

func TestDecisionString(t *testing.T) {
	cases := []struct {
		d    Decision
		want string
	}{
		{Decision{Admit: true, Reason: ReasonAlways, Instance: -1}, "admit standard: always-admit"},
		{Decision{Reason: ReasonOverBudget, Class: Sheddable, Instance: 3, Estimate: 0.6125, Budget: 0.3},
			"reject sheddable: over-budget (estimate 0.6125 s > budget 0.3 s, instance 3)"},
		{Decision{Admit: true, Reason: ReasonCritical, Class: Critical, Instance: 0, Estimate: 0.25, Budget: 0.2},
			"admit critical: critical (estimate 0.25 s vs budget 0.2 s, instance 0)"},
		{Decision{Admit: true, Reason: ReasonCritical, Class: Critical, Instance: -1}, "admit critical: critical"},
		{Decision{Reason: ReasonQueueAtLimit, Instance: 1, Estimate: 12, Budget: 10},
			"reject standard: queue-at-threshold (fleet queue 12 waiting ≥ threshold 10 waiting, instance 1)"},
		{Decision{Reason: ReasonNoToken, Instance: -1, Estimate: 0.2, Budget: 1},
			"reject standard: no-token (bucket 0.2 tokens < cost 1 tokens)"},
		{Decision{Admit: true, Reason: ReasonFloor, Inner: ReasonOverBudget, Class: Sheddable, Instance: 2, Estimate: 0.4, Budget: 0.3},
			"admit sheddable: fairness-floor over over-budget (estimate 0.4 s > budget 0.3 s, instance 2)"},
		{Decision{Reason: ReasonSaturated, Instance: -1, Estimate: 0.95, Budget: 0.9},
			"reject standard: saturated (KV utilisation 0.95 ≥ limit 0.9)"},
		{Decision{Reason: Reason(200), Class: Class(9), Instance: -1}, "reject class(9): reason(200)"},
	}
	for _, c := range cases {
		if got := c.d.String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
