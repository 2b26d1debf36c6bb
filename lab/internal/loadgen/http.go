package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// status is the JSON body the HTTP endpoint answers with.
type status struct {
	CPU         string `json:"cpu"`
	Memory      string `json:"memory"`
	CPUMillis   int64  `json:"cpuMillis"`
	MemoryBytes int64  `json:"memoryBytes"`
	CacheBytes  int64  `json:"cacheBytes,omitempty"`
}

func statusOf(t Targets) status {
	return status{FormatCPU(t.CPUMillis), FormatMemory(t.MemBytes), t.CPUMillis, t.MemBytes, t.CacheBytes}
}

// Handler serves g's targets at "/": GET returns them as JSON; PUT or POST
// with cpu, memory and/or cache (query or form parameters, e.g.
// /?cpu=300m&memory=100Mi) sets them and returns the targets in force.
func Handler(g *Generator) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, g.Targets())
	})
	set := func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxSpecBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, fmt.Sprintf("parsing parameters: %v", err), http.StatusBadRequest)
			return
		}
		var u Update
		for key, values := range r.Form {
			if len(values) != 1 {
				http.Error(w, fmt.Sprintf("%s given %d times", key, len(values)), http.StatusBadRequest)
				return
			}
			if err := u.Set(key, values[0]); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		if u.Empty() {
			http.Error(w, "nothing to set: give cpu and/or memory, e.g. /?cpu=300m&memory=100Mi", http.StatusBadRequest)
			return
		}
		writeStatus(w, g.Apply(u))
	}
	mux.HandleFunc("PUT /{$}", set)
	mux.HandleFunc("POST /{$}", set)
	return mux
}

// withReadyz serves GET /readyz for a readiness probe: 503 until the
// start-up is done, 200 after; everything else goes to h.
func withReadyz(h http.Handler, s *Startup) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.Ready() {
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/", h)
	return mux
}

func writeStatus(w http.ResponseWriter, t Targets) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(statusOf(t))
}
