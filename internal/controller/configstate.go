package controller

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"sync"

	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// ConfigNames are the names of the configuration ConfigMaps, all in the
// controller's namespace.
type ConfigNames struct {
	Main, Accelerators, ServiceClasses, Saturation, QueueingModel, Tuner, Inventory string
}

// defaultConfigNames are the WVA repository's names, so its manifests work.
func defaultConfigNames() ConfigNames {
	return ConfigNames{Main: config.MainName, Accelerators: config.AcceleratorsName, ServiceClasses: config.ServiceClassesName,
		Saturation: config.SaturationName, QueueingModel: config.QueueingModelName, Tuner: config.TunerName, Inventory: config.InventoryName}
}

func (n ConfigNames) all() []string {
	return []string{n.Main, n.Accelerators, n.ServiceClasses, n.Saturation, n.QueueingModel, n.Tuner, n.Inventory}
}

// has says whether name is one of the configuration ConfigMaps.
func (n ConfigNames) has(name string) bool {
	for _, x := range n.all() {
		if x == name {
			return true
		}
	}
	return false
}

// settings is one consistent view of the configuration.
type settings struct {
	Main           config.Main
	Accelerators   map[string]config.Accelerator
	ServiceClasses map[string]engine.ServiceClass
	Saturation     config.Saturation
	QueueingModel  config.QueueingModel
	Tuner          config.Tuner
	Inventory      map[string]int
}

// configState keeps the last good configuration of every ConfigMap and
// the problems of those that are currently invalid (docs/operations.md; an
// invalid ConfigMap never replaces a good one).
type configState struct {
	names ConfigNames
	// base is the main configuration before the ConfigMap: the defaults
	// with the manager's flags applied.
	base config.Main

	mu  sync.RWMutex
	cur settings
	// invalid holds the errors of the ConfigMaps now invalid, by name;
	// changes counts the accepted changes (version).
	invalid map[string]error
	changes int
	// lastData is each ConfigMap's data as last applied (nil: deleted).
	lastData map[string]map[string]string
}

// newConfigState starts from base (the flags) and the other defaults.
func newConfigState(names ConfigNames, base config.Main) *configState {
	s := &configState{names: names, base: base, invalid: map[string]error{}, lastData: map[string]map[string]string{}}
	s.cur = settings{Main: base, Tuner: config.Tuner{Enabled: true}, QueueingModel: config.QueueingModel{SLOMultiplier: 3, TuningEnabled: true}}
	return s
}

// settings returns the current configuration.
func (s *configState) settings() settings {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// version increases with every accepted change.
func (s *configState) version() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changes
}

// problems returns the invalid ConfigMaps' errors, sorted by ConfigMap.
func (s *configState) problems() []error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.invalid))
	for n := range s.invalid {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]error, 0, len(names))
	for _, n := range names {
		out = append(out, s.invalid[n])
	}
	return out
}

// apply parses a ConfigMap's data (nil data with exists false means the
// ConfigMap was deleted: its defaults apply). On an error the previous
// configuration stays and the error is returned and remembered. Data
// equal to the last seen for the ConfigMap is not parsed again (a resync
// changes nothing), and parsing runs outside the lock, so that a slow
// parse never holds up a cycle reading the configuration.
func (s *configState) apply(name string, data map[string]string, exists bool) error {
	if !exists {
		data = nil
	}
	s.mu.RLock()
	last, seen := s.lastData[name]
	lastErr := s.invalid[name]
	s.mu.RUnlock()
	if seen && maps.Equal(last, data) && (last == nil) == (data == nil) {
		return lastErr
	}
	set, err := s.parse(name, data)
	if set == nil {
		return err // not a configuration ConfigMap
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastData[name] = maps.Clone(data)
	if err != nil {
		var cerr *config.Error
		if !errors.As(err, &cerr) {
			err = &config.Error{ConfigMap: name, Problems: []config.Problem{{ConfigMap: name, Message: err.Error()}}}
		}
		s.invalid[name] = err
		return err
	}
	delete(s.invalid, name)
	next := s.cur
	set(&next)
	if !reflect.DeepEqual(next, s.cur) { // a no-op edit changes nothing
		s.cur = next
		s.changes++
	}
	return nil
}

// parse reads a ConfigMap's data into a change of the settings. It reads
// only names and base, which never change, so it needs no lock.
func (s *configState) parse(name string, data map[string]string) (func(*settings), error) {
	switch name {
	case s.names.Main:
		m, err := config.ParseMain(data)
		merged := mergeMain(s.base, m, data)
		return func(n *settings) { n.Main = merged }, err
	case s.names.Accelerators:
		v, err := config.ParseAccelerators(data)
		return func(n *settings) { n.Accelerators = v }, err
	case s.names.ServiceClasses:
		v, err := config.ParseServiceClasses(data)
		return func(n *settings) { n.ServiceClasses = v }, err
	case s.names.Saturation:
		v, err := config.ParseSaturation(data)
		return func(n *settings) { n.Saturation = v }, err
	case s.names.QueueingModel:
		v, err := config.ParseQueueingModel(data)
		return func(n *settings) { n.QueueingModel = v }, err
	case s.names.Tuner:
		v, err := config.ParseTuner(data)
		return func(n *settings) { n.Tuner = v }, err
	case s.names.Inventory:
		v, err := config.ParseInventory(data)
		return func(n *settings) { n.Inventory = v }, err
	}
	return nil, fmt.Errorf("%s is not a configuration ConfigMap", name)
}

// mergeMain lays the ConfigMap's keys over the flags: a key present in the
// ConfigMap wins; an absent one keeps the flag's value.
func mergeMain(base, m config.Main, data map[string]string) config.Main {
	out := base
	set := func(key string) bool { return config.HasValue(data, key) }
	p, bp := &out.Prometheus, m.Prometheus
	for key, f := range map[string]func(){
		"PROMETHEUS_BASE_URL":                 func() { p.URL = bp.URL },
		"PROMETHEUS_TLS_INSECURE_SKIP_VERIFY": func() { p.InsecureSkipVerify = bp.InsecureSkipVerify },
		"PROMETHEUS_CA_CERT_PATH":             func() { p.CAFile = bp.CAFile },
		"PROMETHEUS_CLIENT_CERT_PATH":         func() { p.CertFile = bp.CertFile },
		"PROMETHEUS_CLIENT_KEY_PATH":          func() { p.KeyFile = bp.KeyFile },
		"PROMETHEUS_BEARER_TOKEN_FILE":        func() { p.BearerTokenFile = bp.BearerTokenFile },
		"PROMETHEUS_BEARER_TOKEN_OVER_HTTP":   func() { p.BearerTokenOverHTTP = bp.BearerTokenOverHTTP },
		"PROMETHEUS_TIMEOUT":                  func() { p.Timeout = bp.Timeout },
		"PROMETHEUS_WINDOW":                   func() { p.Window = bp.Window },
		"PROMETHEUS_NAMESPACE_LABEL":          func() { p.NamespaceLabel = bp.NamespaceLabel },
		"PROMETHEUS_POD_LABEL":                func() { p.PodLabel = bp.PodLabel },
		"PROMETHEUS_METRICS_SCHEMA":           func() { p.MetricsSchema = bp.MetricsSchema },
		"GLOBAL_OPT_INTERVAL":                 func() { out.Interval = m.Interval },
		"WVA_SCALE_TO_ZERO":                   func() { out.ScaleToZero = m.ScaleToZero },
		"WVA_MODE":                            func() { out.Mode = m.Mode },
		"WVA_OPTIMIZER":                       func() { out.Optimizer = m.Optimizer },
		"WVA_CAPACITY_SOURCE":                 func() { out.CapacitySource = m.CapacitySource },
		"WVA_SCALE_FROM_ZERO_INTERVAL":        func() { out.ScaleFromZeroInterval = m.ScaleFromZeroInterval },
		"WVA_SCALE_FROM_ZERO_QUERY":           func() { out.ScaleFromZeroQuery = m.ScaleFromZeroQuery },
		"WVA_GATEWAY_RATE_QUERY":              func() { out.GatewayRateQuery = m.GatewayRateQuery },
		"WVA_SURGE":                           func() { out.Surge = m.Surge },
		"WVA_POD_VARIANT_LABEL":               func() { out.PodVariantLabel = m.PodVariantLabel },
	} {
		if set(key) {
			f()
		}
	}
	// The engine's settings have no flags: the ConfigMap's parse (with its
	// zero values meaning the engine's defaults) is the whole story.
	out.Engine = m.Engine
	return out
}
