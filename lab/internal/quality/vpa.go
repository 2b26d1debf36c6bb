package quality

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/snug-dev/snug/lab/internal/quality/node"
)

// VPA's loops as the replay runs them: metrics-server scrapes every 15 s
// (--metric-resolution, its default), the recommender's and the
// updater's loops run every minute (--recommender-interval and
// --updater-interval, their defaults).
const (
	metricsResolution = 15
	vpaLoop           = 60
)

// VPAVersion is the VPA release tools/vpareplay builds against.
const VPAVersion = "1.8.1"

// EnsureVPAReplay builds tools/vpareplay (src) into cache/vpareplay/
// v<VPAVersion>-<hash of its .go files, go.mod and go.sum>/vpareplay unless
// it is there (an edit builds anew), and
// returns the binary's path. The build runs in src's own module (never in
// snug's go.mod), read-only: its go.sum must be complete.
func EnsureVPAReplay(ctx context.Context, src, cache string, log io.Writer) (string, error) {
	h := sha256.New()
	entries, err := os.ReadDir(src)
	if err != nil {
		return "", fmt.Errorf("reading the vpareplay sources: %w", err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return "", fmt.Errorf("reading the vpareplay sources: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", n, len(data))
		h.Write(data)
	}
	dir := filepath.Join(cache, "vpareplay", "v"+VPAVersion+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	bin := filepath.Join(dir, "vpareplay")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("building vpareplay: %w", err)
	}
	fmt.Fprintf(log, "building vpareplay (VPA %s's recommender and updater) into %s\n", VPAVersion, dir)
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building vpareplay in %s (it needs the go command and the module proxy once; --no-vpa skips VPA): %w\n%s", src, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("building vpareplay: %w", err)
	}
	return bin, nil
}

// FindVPASource finds lab/tools/vpareplay: next to the executable's bin/
// (a make build), then under the working directory and its parents (the
// repository's root or the lab module's).
func FindVPASource() (string, error) {
	var tried []string
	try := func(dir string) (string, bool) {
		for _, p := range []string{filepath.Join(dir, "lab", "tools", "vpareplay"), filepath.Join(dir, "tools", "vpareplay")} {
			tried = append(tried, p)
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return p, true
			}
		}
		return "", false
	}
	if exe, err := os.Executable(); err == nil {
		if p, ok := try(filepath.Dir(filepath.Dir(exe))); ok {
			return p, nil
		}
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if p, ok := try(d); ok {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("finding lab/tools/vpareplay: not in %v (give --vpa-source)", tried)
}

// The protocol of tools/vpareplay (its main.go documents it).
type vpaTick struct {
	Time          int64      `json:"time"`
	Pods          []vpaPodIn `json:"pods"`
	SkipRecommend bool       `json:"skipRecommend,omitempty"`
	SkipUpdate    bool       `json:"skipUpdate,omitempty"`
}

type vpaPodIn struct {
	Name       string           `json:"name"`
	StartTime  int64            `json:"startTime"`
	Resizing   bool             `json:"resizing"`
	Containers []vpaContainerIn `json:"containers"`
}

type vpaContainerIn struct {
	Name             string  `json:"name"`
	CPURequestMillis int64   `json:"cpuRequestMillis"`
	CPULimitMillis   int64   `json:"cpuLimitMillis"`
	MemRequestBytes  int64   `json:"memRequestBytes"`
	MemLimitBytes    int64   `json:"memLimitBytes"`
	CPUMillis        float64 `json:"cpuMillis"`
	MemBytes         int64   `json:"memBytes"`
	HasSample        bool    `json:"hasSample"`
	SampleStart      int64   `json:"sampleStart"`
	OOMs             []int64 `json:"ooms,omitempty"`
	LastOOMStart     int64   `json:"lastOOMStart,omitempty"`
	LastOOMEnd       int64   `json:"lastOOMEnd,omitempty"`
}

type vpaAmounts struct {
	CPUMillis int64 `json:"cpuMillis"`
	MemBytes  int64 `json:"memBytes"`
}

// VPAEstimate is one container's recommendation from VPA's code.
type VPAEstimate struct {
	Target     vpaAmounts `json:"target"`
	LowerBound vpaAmounts `json:"lowerBound"`
	UpperBound vpaAmounts `json:"upperBound"`
}

type vpaUpdate struct {
	Pod        string `json:"pod"`
	Containers map[string]struct {
		CPURequestMillis int64 `json:"cpuRequestMillis"`
		CPULimitMillis   int64 `json:"cpuLimitMillis"`
		MemRequestBytes  int64 `json:"memRequestBytes"`
		MemLimitBytes    int64 `json:"memLimitBytes"`
	} `json:"containers"`
}

type vpaAnswer struct {
	Recommendation map[string]VPAEstimate `json:"recommendation"`
	Updates        []vpaUpdate            `json:"updates"`
}

// vpaProc is a running vpareplay.
type vpaProc struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	inC io.Closer
	out *json.Decoder
}

func startVPA(bin string) (*vpaProc, error) {
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting vpareplay: %w", err)
	}
	return &vpaProc{cmd: cmd, in: bufio.NewWriter(stdin), inC: stdin, out: json.NewDecoder(bufio.NewReader(stdout))}, nil
}

func (v *vpaProc) ask(t vpaTick) (vpaAnswer, error) {
	var a vpaAnswer
	if err := json.NewEncoder(v.in).Encode(t); err != nil {
		return a, fmt.Errorf("writing to vpareplay: %w", err)
	}
	if err := v.in.Flush(); err != nil {
		return a, fmt.Errorf("writing to vpareplay: %w", err)
	}
	if err := v.out.Decode(&a); err != nil {
		return a, fmt.Errorf("reading from vpareplay: %w", err)
	}
	return a, nil
}

func (v *vpaProc) close() {
	v.inC.Close()
	_ = v.cmd.Wait()
}

// vpaSizer is VPA 1.8.1 in InPlaceOrRecreate mode: metrics-server's
// samples (the CPU average of the last 15 s window, the working set at the
// scrape), the recommender's and updater's minute loops in vpareplay, and
// the updater's in-place resizes sent to the node.
type vpaSizer struct {
	bin  string
	proc *vpaProc
	// phases are the seconds of each minute at whose end the recommender
	// and the updater loop.
	phases VPAPhases
	// per pod and container: the latest metrics sample and its window.
	cpuWindow [][]float64
	sample    [][]vpaContainerIn
	ooms      [][][]int64
	lastOOM   [][][2]int64
	started   [][]int64
	// Recommendations are the latest answers, per container name (for
	// the SVG and docs).
	last map[string]VPAEstimate
}

// VPAPhases are the seconds of each minute (0-59, counted from the
// trace's second 0) at whose end VPA's recommender and updater run their
// loops. In a cluster each runs every minute from its own start, so the
// phases are arbitrary; DefaultVPAPhases has both at 59, the updater
// right after the recommender (the best case for VPA: no wait between a
// recommendation and its update). The calibration sets them from the lab.
type VPAPhases struct {
	Recommender, Updater int
}

// DefaultVPAPhases are the replay's phases unless Env says otherwise.
var DefaultVPAPhases = VPAPhases{Recommender: vpaLoop - 1, Updater: vpaLoop - 1}

func (v *vpaSizer) start(w *world) error {
	p, err := startVPA(v.bin)
	if err != nil {
		return err
	}
	v.proc = p
	for _, pod := range w.tr.Pods {
		n := len(pod.Containers)
		v.cpuWindow = append(v.cpuWindow, make([]float64, n))
		v.sample = append(v.sample, make([]vpaContainerIn, n))
		v.ooms = append(v.ooms, make([][]int64, n))
		v.lastOOM = append(v.lastOOM, make([][2]int64, n))
		st := make([]int64, n)
		for i := range st {
			st[i] = now(0).Unix()
		}
		v.started = append(v.started, st)
	}
	return nil
}

func (v *vpaSizer) stop() {
	if v.proc != nil {
		v.proc.close()
	}
}

func (v *vpaSizer) second(w *world, t int) ([]resizeReq, error) {
	for p := range w.tr.Pods {
		for c := range w.tr.Pods[p].Containers {
			s := w.last[p][c]
			v.cpuWindow[p][c] += s.CPUUsageMillis
			if s.OOMKilled {
				v.ooms[p][c] = append(v.ooms[p][c], now(t).Unix())
				v.lastOOM[p][c] = [2]int64{v.started[p][c], now(t).Unix()}
			}
			if s.Restarted {
				v.started[p][c] = now(t).Unix()
			}
			if (t+1)%metricsResolution == 0 {
				// A scrape: the cpu rate over the window, the working set
				// now; a container that is down reports nothing.
				if s.Running {
					v.sample[p][c] = vpaContainerIn{
						CPUMillis: v.cpuWindow[p][c] / metricsResolution, MemBytes: int64(s.MemBytes),
						HasSample: true, SampleStart: now(t + 1 - metricsResolution).Unix(),
					}
				}
				v.cpuWindow[p][c] = 0
			}
		}
	}
	recommend, update := t%vpaLoop == v.phases.Recommender, t%vpaLoop == v.phases.Updater
	if !recommend && !update {
		return nil, nil
	}
	tick := vpaTick{Time: now(t + 1).Unix(), SkipRecommend: !recommend, SkipUpdate: !update}
	for p, pod := range w.tr.Pods {
		in := vpaPodIn{Name: pod.Name, StartTime: now(w.podStart[p]).Unix()}
		for c, tc := range pod.Containers {
			nc := w.cont[p][c]
			a := nc.Actual
			in.Resizing = in.Resizing || nc.Pending()
			ci := v.sample[p][c]
			ci.Name = tc.Name
			ci.CPURequestMillis, ci.CPULimitMillis, ci.MemRequestBytes, ci.MemLimitBytes = a.CPURequestMillis, a.CPULimitMillis, a.MemRequestBytes, a.MemLimitBytes
			ci.OOMs = v.ooms[p][c]
			ci.LastOOMStart, ci.LastOOMEnd = v.lastOOM[p][c][0], v.lastOOM[p][c][1]
			in.Containers = append(in.Containers, ci)
			if recommend {
				v.sample[p][c] = vpaContainerIn{} // the recommender takes each sample once
				v.ooms[p][c] = nil
			}
		}
		tick.Pods = append(tick.Pods, in)
	}
	ans, err := v.proc.ask(tick)
	if err != nil {
		return nil, err
	}
	v.last = ans.Recommendation
	if e, ok := ans.Recommendation[w.tr.Pods[0].Containers[0].Name]; ok {
		if n := len(w.metrics.Targets); n == 0 || w.metrics.Targets[n-1].CPUMillis != e.Target.CPUMillis {
			w.metrics.Targets = append(w.metrics.Targets, TargetChange{Second: t, CPUMillis: e.Target.CPUMillis})
		}
	}
	var out []resizeReq
	for _, u := range ans.Updates {
		for p, pod := range w.tr.Pods {
			if pod.Name != u.Pod {
				continue
			}
			for c, tc := range pod.Containers {
				r, ok := u.Containers[tc.Name]
				if !ok {
					continue
				}
				out = append(out, resizeReq{pod: p, container: c, res: node.Resources{
					CPURequestMillis: r.CPURequestMillis, CPULimitMillis: r.CPULimitMillis,
					MemRequestBytes: r.MemRequestBytes, MemLimitBytes: r.MemLimitBytes,
				}})
			}
		}
	}
	return out, nil
}
