package sim

// What the external tests (package sim_test, which import the baselines
// and so cannot be internal) reach of the simulator's insides.

// SetCheck has f called after every event of s with the event's time.
func SetCheck(s *Sim, f func(s *Sim, t float64)) { s.check = func(s *Sim, e *event) { f(s, e.t) } }

const CancelCheckEvents = cancelCheckEvents

var (
	BoundsFirst       = boundsFirst
	CheckConservation = checkConservation
	ResultsJSON       = resultsJSON
	FirstDifference   = firstDifference
	MustRead          = mustRead
	Lookup            = lookup
)

// RaceBuild tells whether the race detector is on.
const RaceBuild = raceBuild

// AllKnobs is the registry's knobs by key.
func AllKnobs() map[string]Knob { return knobs }
