package admission

import "strconv"

// Class is a request's SLO class. The zero value is Standard, so that a
// request that names no class is neither protected nor shed first. The
// policies treat a value outside the three like Critical.
type Class uint8

const (
	Standard  Class = iota // the default class: shed only when over its budget
	Critical               // never rejected by any policy of this package
	Sheddable              // shed first: the tightest budget, the lowest queue threshold
	numClasses
)

// String returns the class's name as the configuration spells it.
func (c Class) String() string {
	switch c {
	case Critical:
		return "critical"
	case Standard:
		return "standard"
	case Sheddable:
		return "sheddable"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// protected reports whether no policy may reject c: Critical, and any value
// outside the three classes (never shed what the configuration does not
// name).
func (c Class) protected() bool { return c == Critical || c >= numClasses }

// Request is what a policy knows about one arriving request.
type Request struct {
	Class Class
	// Priority orders the servers' queues (vLLM's priority scheduling, the
	// endpoint picker's flow control): higher runs first. Requests of the
	// same priority are served in arrival order.
	Priority int
	// Group is the request's prefix group (a tenant, a system prompt), for
	// the fairness floor; 0 means none. A gateway that has no explicit group
	// can use the hash of the prompt's first blocks (Hashes).
	Group uint64
	// InputTokens is the prompt's length in tokens.
	InputTokens int
}

// Waiting counts the requests waiting on an instance at one priority.
type Waiting struct {
	Priority int
	Count    int
}

// Instance is a snapshot of one serving instance as the gateway sees it
// when a request arrives. Cached is per request: the caller fills it once per
// request, from the prefix Index (Match × block size) or, in a simulator that
// knows the servers' caches exactly, from its own count.
type Instance struct {
	// ID names the instance for the caller (the prefix Index's key). The
	// policies do not read it; a Decision names an instance by its position
	// in the fleet slice.
	ID int
	// Waiting is the queue by priority, in any order. The caller owns the
	// slice and may reuse it between requests.
	Waiting []Waiting
	// Running is the size of the running batch; KVUtil the share of KV-cache
	// blocks in use, in [0, 1]. Predictive skips instances whose KVUtil is at
	// its KVLimit; Running is for the router's scorers.
	Running int
	KVUtil  float64
	// StepTime is the instance's engine step (iteration) time in seconds:
	// the tuner's learned iteration time or the observed ITL. Zero or less
	// means unknown, and the policy's default applies.
	StepTime float64
	// Cached is the number of the current request's prompt tokens whose KV
	// is resident on this instance (a leading run of full blocks).
	Cached int
}

// Ahead is the number of waiting requests that a new arrival of the given
// priority would wait behind: those of the same or a higher priority. Under
// priority scheduling the lower ones are overtaken, so they are not counted.
func (in *Instance) Ahead(priority int) int {
	n := 0
	for _, w := range in.Waiting {
		if w.Priority >= priority && w.Count > 0 {
			n += w.Count
		}
	}
	return n
}

// Queued is the number of waiting requests of every priority.
func (in *Instance) Queued() int {
	n := 0
	for _, w := range in.Waiting {
		if w.Count > 0 {
			n += w.Count
		}
	}
	return n
}

// Policy decides whether to admit a request. now is the caller's clock in
// seconds (a wall clock read at the edge, or the simulator's virtual time);
// it must not go backwards. Decide may update the policy's own state (a
// token bucket spends a token, the fairness floor counts the request), so a
// policy is not safe for concurrent use: the gateway serialises its calls.
type Policy interface {
	Decide(now float64, req Request, fleet []Instance) Decision
}
