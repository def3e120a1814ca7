package emulate

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The gateway's series, as llm-d's endpoint picker exports them, with the
// model's namespace as a label: the flow-control queue (requests held for
// want of a ready server: WVA's scale-from-zero signal,
// config.DefaultScaleFromZeroQuery) and the requests received (its
// arrival-rate signal, config.DefaultGatewayRateQuery).
var (
	gatewayLabels = []string{"model_name", "target_model_name", "namespace"}
	descQueue     = prometheus.NewDesc("llm_d_epp_flow_control_queue_size", "Current number of requests in the flow control queue.", gatewayLabels, nil)
	descRequests  = prometheus.NewDesc("inference_objective_request_total", "Counter of inference objective requests broken out for each model and target model.", gatewayLabels, nil)
)

type gatewayRow struct {
	model, namespace string
	waiting          int
	arrived          int64
}

// gatewayMetrics renders the gateway's page.
type gatewayMetrics struct{ rows []gatewayRow }

var _ prometheus.Collector = (*gatewayMetrics)(nil)

// Describe implements prometheus.Collector (unchecked).
func (g *gatewayMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (g *gatewayMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, r := range g.rows {
		ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(r.waiting), r.model, r.model, r.namespace)
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(r.arrived), r.model, r.model, r.namespace)
	}
}

// gatewayHandler serves the gateway's page.
func gatewayHandler(f *Fleet) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(f.gatewayPage()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(w, r)
	})
}
