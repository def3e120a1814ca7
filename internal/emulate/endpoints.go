package emulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// endpoint is one emulated server's /metrics listener on loopback.
type endpoint struct {
	addr string
	srv  *http.Server
}

// serve starts a /metrics endpoint on 127.0.0.1 (a free port).
func serve(what string, h http.Handler) (*endpoint, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for %s: %w", what, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	e := &endpoint{addr: l.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = e.srv.Serve(l) }()
	return e, nil
}

// metricsHandler serves the server's vLLM page; 404 once it is gone.
func metricsHandler(f *Fleet, model string, id int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := f.page(model, id)
		if !ok {
			http.NotFound(w, r)
			return
		}
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(w, r)
	})
}

func (e *endpoint) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
}

// sdGroup is one target group of a Prometheus file-service-discovery
// file (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config).
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// sdTarget is one scraped server.
type sdTarget struct {
	Addr, Namespace, Pod, Deployment string
}

// renderSD is the file's content: one group per server, sorted by
// namespace and pod, with the labels namespace, pod and deployment; a
// target without a pod is the gateway, labelled component=emulated-gateway
// (its series carry their namespace). The model is not a target label:
// the series carry model_name themselves.
func renderSD(ts []sdTarget) []byte {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Namespace != ts[j].Namespace {
			return ts[i].Namespace < ts[j].Namespace
		}
		return ts[i].Pod < ts[j].Pod
	})
	groups := make([]sdGroup, 0, len(ts))
	for _, t := range ts {
		labels := map[string]string{"namespace": t.Namespace, "pod": t.Pod, "deployment": t.Deployment}
		if t.Pod == "" {
			labels = map[string]string{"component": "emulated-gateway"}
		}
		groups = append(groups, sdGroup{Targets: []string{t.Addr}, Labels: labels})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		panic("emulate: marshalling the SD file: " + err.Error()) // plain strings cannot fail
	}
	return append(b, '\n')
}

// sdWriter rewrites the file atomically (a temporary file renamed over
// it) when its content changes.
type sdWriter struct {
	path string
	last []byte
}

func (w *sdWriter) write(content []byte) error {
	if w.path == "" || (w.last != nil && bytes.Equal(content, w.last)) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.path), "."+filepath.Base(w.path)+".*")
	if err != nil {
		return fmt.Errorf("writing the SD file: %w", err)
	}
	_, werr := tmp.Write(content)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing the SD file: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { //nolint:gosec // G302: Prometheus, another user perhaps, reads it
		return fmt.Errorf("writing the SD file: %w", err)
	}
	if err := os.Rename(tmp.Name(), w.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing the SD file: %w", err)
	}
	w.last = content
	return nil
}
