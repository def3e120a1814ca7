package admission

import (
	"strconv"
	"strings"
)

// Reason says why a policy decided as it did. What Decision.Estimate and
// Decision.Budget hold depends on it (see each constant).
type Reason uint8

const (
	// ReasonAlways: the always-admit policy. Estimate and Budget are 0.
	ReasonAlways Reason = iota
	// ReasonCritical: critical requests are never rejected. The predictive
	// policy still fills Estimate, Budget (seconds) and Instance; the other
	// policies leave them 0 (and Instance -1).
	ReasonCritical
	// ReasonToken / ReasonNoToken: the token bucket had a token for the
	// request, or had none. Estimate is the tokens it held before the
	// request, Budget the one token a request costs.
	ReasonToken
	ReasonNoToken
	// ReasonQueueBelow / ReasonQueueAtLimit: the SLO gate's fleet queue depth
	// (Estimate, requests) is below, or at or above, the class's threshold
	// (Budget, requests).
	ReasonQueueBelow
	ReasonQueueAtLimit
	// ReasonWithinBudget / ReasonOverBudget: the predictive policy's
	// best-case TTFT estimate (Estimate, seconds) is within, or over, the
	// class's budget times the headroom (Budget, seconds).
	ReasonWithinBudget
	ReasonOverBudget
	// ReasonNoInstance: the fleet is empty, so there is nothing to estimate
	// on. The request is admitted: the gateway holds it until an instance is
	// ready (scale from zero), bounded by its own timeout.
	ReasonNoInstance
	// ReasonSaturated: every instance's KV utilisation is at the predictive
	// policy's KVLimit; Estimate is the lowest utilisation, Budget the limit.
	ReasonSaturated
	// ReasonFloor: the inner policy rejected the request, but its prefix
	// group was below its minimum admission share, so the fairness floor
	// admitted it. Estimate, Budget and Instance are the inner decision's;
	// Inner is its reason.
	ReasonFloor
	numReasons
)

var reasonNames = [numReasons]string{
	ReasonAlways:       "always-admit",
	ReasonCritical:     "critical",
	ReasonToken:        "token",
	ReasonNoToken:      "no-token",
	ReasonQueueBelow:   "queue-below-threshold",
	ReasonQueueAtLimit: "queue-at-threshold",
	ReasonWithinBudget: "within-budget",
	ReasonOverBudget:   "over-budget",
	ReasonNoInstance:   "no-instance",
	ReasonSaturated:    "saturated",
	ReasonFloor:        "fairness-floor",
}

// String returns the reason's short name, as metrics labels would carry it.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Decision is a policy's answer: a small value, filled without formatting;
// String renders it as text only when someone reads it.
type Decision struct {
	Admit  bool
	Reason Reason
	// Inner is the inner policy's reason when Reason is ReasonFloor.
	Inner Reason
	Class Class
	// Instance is the fleet index the decision was made on (the predictive
	// policy's best-case instance, the SLO gate's shortest queue), or -1.
	Instance int
	// Estimate and Budget are what the policy compared; their unit depends on
	// Reason.
	Estimate float64
	Budget   float64
}

// String formats the decision, for logs and tests, for example
// "reject standard: over-budget (estimate 0.612 s > budget 0.5 s, instance 3)".
func (d Decision) String() string {
	var b strings.Builder
	if d.Admit {
		b.WriteString("admit ")
	} else {
		b.WriteString("reject ")
	}
	b.WriteString(d.Class.String())
	b.WriteString(": ")
	b.WriteString(d.Reason.String())
	r := d.Reason
	if r == ReasonFloor {
		b.WriteString(" over ")
		b.WriteString(d.Inner.String())
		r = d.Inner
	}
	if detail := d.detail(r); detail != "" {
		b.WriteString(" (")
		b.WriteString(detail)
		if d.Instance >= 0 {
			b.WriteString(", instance ")
			b.WriteString(strconv.Itoa(d.Instance))
		}
		b.WriteString(")")
	}
	return b.String()
}

// comparisons says, per reason, what Estimate and Budget are and how they
// compared: the text is "<what><estimate><unit><op><limit><budget><unit>".
var comparisons = [numReasons]struct{ what, unit, op, limit string }{
	ReasonCritical:     {"estimate ", " s", " vs ", "budget "},
	ReasonToken:        {"bucket ", " tokens", " ≥ ", "cost "},
	ReasonNoToken:      {"bucket ", " tokens", " < ", "cost "},
	ReasonQueueBelow:   {"fleet queue ", " waiting", " < ", "threshold "},
	ReasonQueueAtLimit: {"fleet queue ", " waiting", " ≥ ", "threshold "},
	ReasonWithinBudget: {"estimate ", " s", " ≤ ", "budget "},
	ReasonOverBudget:   {"estimate ", " s", " > ", "budget "},
	ReasonSaturated:    {"KV utilisation ", "", " ≥ ", "limit "},
}

// detail is the comparison the reason r made, or "" when it made none.
func (d Decision) detail(r Reason) string {
	if r >= numReasons || comparisons[r].what == "" || (r == ReasonCritical && d.Budget == 0) {
		return ""
	}
	c := comparisons[r]
	return c.what + fmtFloat(d.Estimate) + c.unit + c.op + c.limit + fmtFloat(d.Budget) + c.unit
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
