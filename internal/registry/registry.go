// Package registry holds named, pluggable implementations — metrics
// sources, actuators, capacity sources — registered at start-up and looked
// up by the name a configuration gives (the seams of the WVA paper §IV).
package registry

import (
	"sort"
	"sync"
)

// Registry maps names to values of type T (usually factories). It is safe
// for concurrent use.
type Registry[T any] struct {
	what string // for panics: "metrics source", "actuator"…
	mu   sync.RWMutex
	m    map[string]T
}

// New returns an empty registry of what (a noun used in messages).
func New[T any](what string) *Registry[T] {
	return &Registry[T]{what: what, m: map[string]T{}}
}

// Register adds name. It panics on a duplicate, as registration happens
// at start-up and a duplicate is a programming error.
func (r *Registry[T]) Register(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic("registry: " + r.what + " " + name + " registered twice")
	}
	r.m[name] = v
}

// Get returns the value registered as name.
func (r *Registry[T]) Get(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for k := range r.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// All returns a copy of the registrations.
func (r *Registry[T]) All() map[string]T {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]T, len(r.m))
	for k, v := range r.m {
		out[k] = v
	}
	return out
}
