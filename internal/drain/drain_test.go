package drain

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

var pol = Policy{Timeout: 120 * time.Second}

func ready(name string, inFlight float64) Pod {
	return Pod{Name: name, Ready: true, InFlight: inFlight}
}

func drained(name string, since time.Time, inFlight float64) Pod {
	return Pod{Name: name, Ready: true, Draining: true, Since: since, InFlight: inFlight}
}

// The whole sequence on a Deployment: the victim leaves rotation, the count
// stays while it serves, and drops once it is idle — never before.
func TestSequenceDeployment(t *testing.T) {
	pods := []Pod{ready("a", 3), ready("b", 1), ready("c", 4)}
	st := Plan(at(0), pol, 3, 2, []string{"b"}, pods)
	if st.Replicas != 3 || !reflect.DeepEqual(st.Drain, []string{"b"}) || st.Remove != nil {
		t.Fatalf("first step: %+v", st)
	}
	pods[1] = drained("b", at(0), 1)
	st = Plan(at(30), pol, 3, 2, []string{"b"}, pods)
	if st.Replicas != 3 || !reflect.DeepEqual(st.Waiting, []string{"b"}) || st.Drain != nil {
		t.Fatalf("busy victim: %+v", st)
	}
	pods[1].InFlight = 0
	st = Plan(at(60), pol, 3, 2, []string{"a"}, pods) // the engine's choice moved on; the drain under way wins
	if st.Replicas != 2 || !reflect.DeepEqual(st.Remove, []string{"b"}) || st.Drain != nil || st.Restore != nil {
		t.Fatalf("idle victim: %+v", st)
	}
	if st.Note == "" {
		t.Fatal("no note")
	}
}

// An idle pod taken out of rotation is not removed in the same step: the
// metrics it was judged by predate the drain.
func TestIdleNeedsOneMoreStep(t *testing.T) {
	pods := []Pod{ready("a", 0), ready("b", 2)}
	if st := Plan(at(0), pol, 2, 1, []string{"a"}, pods); st.Replicas != 2 || !reflect.DeepEqual(st.Drain, []string{"a"}) {
		t.Fatalf("%+v", st)
	}
	pods[0] = drained("a", at(0), 0)
	if st := Plan(at(0), pol, 2, 1, []string{"a"}, pods); st.Replicas != 2 {
		t.Fatalf("removed in the step that drained it: %+v", st)
	}
	if st := Plan(at(1), pol, 2, 1, []string{"a"}, pods); st.Replicas != 1 {
		t.Fatalf("not removed once idle: %+v", st)
	}
}

func TestTimeoutAndUnknownLoad(t *testing.T) {
	pods := []Pod{drained("a", at(0), 5), drained("b", at(0), -1), ready("c", 0)}
	if st := Plan(at(119), pol, 3, 1, nil, pods); st.Replicas != 3 || len(st.Waiting) != 2 {
		t.Fatalf("before the timeout: %+v", st)
	}
	st := Plan(at(120), pol, 3, 1, nil, pods)
	if st.Replicas != 1 || !reflect.DeepEqual(st.Remove, []string{"a", "b"}) {
		t.Fatalf("at the timeout: %+v", st)
	}
}

// Load returns: a scale-up, a hold or a smaller scale-down puts victims
// back, keeping the drains that began first.
func TestRestore(t *testing.T) {
	pods := []Pod{drained("a", at(10), 2), drained("b", at(0), 2), ready("c", 1)}
	for _, desired := range []int{3, 4} {
		st := Plan(at(20), pol, 3, desired, nil, pods)
		if st.Replicas != desired || !reflect.DeepEqual(st.Restore, []string{"a", "b"}) || st.Note != "" {
			t.Fatalf("desired %d: %+v", desired, st)
		}
	}
	st := Plan(at(20), pol, 3, 2, []string{"c"}, pods)
	if !reflect.DeepEqual(st.Restore, []string{"a"}) || !reflect.DeepEqual(st.Waiting, []string{"b"}) || st.Replicas != 3 {
		t.Fatalf("smaller scale-down: %+v", st)
	}
}

// Pods that serve nothing go first, without a drain, as the ReplicaSet
// deletes pods that are not ready before ready ones.
func TestNotReadyGoFirst(t *testing.T) {
	pods := []Pod{ready("a", 2), {Name: "s", InFlight: -1}, ready("b", 0)}
	st := Plan(at(0), pol, 3, 2, []string{"b"}, pods)
	if st.Replicas != 2 || st.Drain != nil {
		t.Fatalf("%+v", st)
	}
	st = Plan(at(0), pol, 3, 1, []string{"b"}, pods)
	if st.Replicas != 2 || !reflect.DeepEqual(st.Drain, []string{"b"}) {
		t.Fatalf("%+v", st)
	}
}

// The engine may name fewer victims than needed (it never names a
// saturated pod); the least loaded of the others make up the number.
func TestFewVictims(t *testing.T) {
	pods := []Pod{ready("a", 9), ready("b", -1), ready("c", 4), ready("d", 1)}
	st := Plan(at(0), pol, 4, 1, []string{"d"}, pods)
	if !reflect.DeepEqual(st.Drain, []string{"a", "c", "d"}) {
		t.Fatalf("%+v", st)
	}
	st = Plan(at(0), pol, 4, 2, []string{"d", "zz"}, pods)
	if !reflect.DeepEqual(st.Drain, []string{"c", "d"}) {
		t.Fatalf("%+v", st)
	}
}

// An ordered workload removes its highest ranks: those are drained, and the
// count goes down only as far as every rank above it is done.
func TestOrdered(t *testing.T) {
	op := Policy{Timeout: time.Minute, Ordered: true}
	pods := []Pod{{Name: "w-0", Ready: true, Rank: 0, InFlight: 0}, {Name: "w-1", Ready: true, Rank: 1, InFlight: 5},
		{Name: "w-2", Ready: true, Rank: 2, InFlight: 0}, {Name: "w-3", Rank: 3, InFlight: -1}}
	st := Plan(at(0), op, 4, 1, []string{"w-0"}, pods)
	if st.Replicas != 3 || !reflect.DeepEqual(st.Drain, []string{"w-1", "w-2"}) {
		t.Fatalf("%+v", st)
	}
	pods[1].Draining, pods[1].Since = true, at(0)
	pods[2].Draining, pods[2].Since = true, at(0)
	st = Plan(at(10), op, 3, 1, nil, pods[:3])
	if st.Replicas != 2 || !reflect.DeepEqual(st.Remove, []string{"w-2"}) || !reflect.DeepEqual(st.Waiting, []string{"w-1"}) {
		t.Fatalf("%+v", st)
	}
	st = Plan(at(60), op, 2, 1, nil, pods[:2])
	if st.Replicas != 1 || !reflect.DeepEqual(st.Remove, []string{"w-1"}) {
		t.Fatalf("%+v", st)
	}
	// A busy lower rank blocks the idle ones above it from going alone?
	// No: lowering to 2 removes only rank 2 and up.
	pods = []Pod{{Name: "w-0", Ready: true, Rank: 0}, {Name: "w-1", Ready: true, Rank: 1, Draining: true, Since: at(0), InFlight: 3},
		{Name: "w-2", Ready: true, Rank: 2, Draining: true, Since: at(0)}}
	if st := Plan(at(5), op, 3, 1, nil, pods); st.Replicas != 2 {
		t.Fatalf("%+v", st)
	}
}

func TestOff(t *testing.T) {
	pods := []Pod{drained("a", at(0), 3), ready("b", 1)}
	st := Plan(at(0), Policy{}, 2, 1, []string{"b"}, pods)
	if st.Replicas != 1 || !reflect.DeepEqual(st.Restore, []string{"a"}) || st.Drain != nil {
		t.Fatalf("%+v", st)
	}
}

// Whatever the input, the count stays within [desired, current] on a
// scale-down, and no pod is both drained and restored.
func FuzzPlan(f *testing.F) {
	f.Add(uint64(1), 5, 2, true)
	f.Add(uint64(77), 3, 0, false)
	f.Fuzz(func(t *testing.T, seed uint64, current, desired int, ordered bool) {
		current, desired = current%64, desired%64
		if current < 0 || desired < 0 {
			t.Skip()
		}
		var pods []Pod
		x := seed
		next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
		for i := range current {
			r := next()
			pods = append(pods, Pod{Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), Ready: r%3 != 0, Draining: r%5 == 0,
				Since: at(int(r % 200)), InFlight: float64(int(r%7) - 1), Rank: i})
		}
		st := Plan(at(150), Policy{Timeout: time.Minute, Ordered: ordered}, current, desired, []string{"aa", "zz"}, pods)
		if desired < current && (st.Replicas < desired || st.Replicas > current) {
			t.Fatalf("count %d outside [%d, %d]", st.Replicas, desired, current)
		}
		if desired >= current && st.Replicas != desired {
			t.Fatalf("count %d, want %d", st.Replicas, desired)
		}
		seen := map[string]bool{}
		for _, l := range [][]string{st.Drain, st.Restore, st.Remove, st.Waiting} {
			for _, n := range l {
				if seen[n] {
					t.Fatalf("%s in two lists: %+v", n, st)
				}
				seen[n] = true
			}
		}
	})
}
