package controller

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// tunerParams is one variant's learned parameters as GET /tuner/params
// returns them (as the WVA repository's tuner exposes them, extended with the filter's confidence; docs/tuner.md).
type tunerParams struct {
	Namespace    string      `json:"namespace"`
	Model        string      `json:"model"`
	Variant      string      `json:"variant"`
	ServiceModel string      `json:"serviceModel"`
	Alpha        float64     `json:"alpha"`
	Beta         float64     `json:"beta"`
	Gamma        float64     `json:"gamma"`
	Delta        float64     `json:"delta,omitempty"`
	Covariance   [][]float64 `json:"covariance"`
	NIS          float64     `json:"nis"`
	Updates      int         `json:"updates"`
	Rejections   int         `json:"rejections"`
	UpdatedAt    time.Time   `json:"updatedAt"`
}

// tunerHandler serves GET /tuner/params?namespace=&model=&variant= (all
// filters optional) as a JSON list.
func tunerHandler(s *configMapStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		out := []tunerParams{}
		for _, e := range s.list(q.Get("namespace"), q.Get("model"), q.Get("variant")) {
			out = append(out, paramsOf(e.Key, e.Record))
		}
		if len(out) == 0 && (q.Get("variant") != "" || q.Get("model") != "") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "no learned parameters for this filter"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	})
}

func paramsOf(k tuner.Key, r tuner.Record) tunerParams {
	r = finite(r)
	return tunerParams{Namespace: k.Namespace, Model: k.Model, Variant: k.Variant, ServiceModel: r.ServiceModel,
		Alpha: r.Params.Alpha, Beta: r.Params.Beta, Gamma: r.Params.Gamma, Delta: r.Params.Delta,
		Covariance: r.StateCovariance, NIS: r.LastNIS, Updates: r.Updates, Rejections: r.Rejections, UpdatedAt: r.LastUpdate}
}
