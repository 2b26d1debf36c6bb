package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/history"
)

// KubeletCostOptions configure the measure of what the kubelet spends on
// snug's pod writes (docs/scale.md): a snapshot is a PATCH of one pod
// annotation, which the kubelet receives through its pod watch and syncs
// the pod for, though no container changes.
type KubeletCostOptions struct {
	Client kubernetes.Interface
	// Namespace holds the pods, which run on the kubelet's node.
	Namespace string
	Pods      []corev1.Pod
	// KubeletPID is the kubelet's process, whose CPU time is read from
	// /proc (ProcRoot, default /proc).
	KubeletPID int
	ProcRoot   string
	// Rates are the patches per pod per minute measured, each against a
	// window without any in the same round; Window is each window's length
	// and Rounds how many rounds.
	Rates  []float64
	Window time.Duration
	Rounds int
	// Values are the annotation values the patches alternate between
	// (each patch changes the pod): snapshots of the size snug writes.
	Values []string
	Log    io.Writer
}

// KubeletCostRow is one rate's result.
type KubeletCostRow struct {
	Rate float64
	// Patches per round; Base and With the kubelet's cores in each round's
	// window without and with them.
	Patches    []int
	Base, With []float64
	// Seconds is each round's window with patches as it ran: it ends at
	// the first patch's tick past the window asked for.
	Seconds []float64
	// MsPerPatch is the median over the rounds of the kubelet's extra CPU
	// time per patch (With - Base, over the patches), in milliseconds.
	MsPerPatch float64
}

// clockTicks is the unit of /proc/PID/stat's utime and stime: USER_HZ,
// 100 on Linux's mainstream architectures (the kernel exports it to user
// space as a fixed 100, whatever its own HZ).
const clockTicks = 100

// processCPU reads a process's user and system CPU time from
// /proc/PID/stat.
func processCPU(procRoot string, pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU is utime + stime of one /proc/PID/stat line. The
// command (field 2) is in parentheses and may hold spaces: the fields
// counted from the last ")".
func parseProcStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command field", stat)
	}
	f := strings.Fields(stat[i+1:])
	// After the command: state is field 3, utime 14 and stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// KubeletCost measures, in each round, a window without writes and one
// window per rate with pod annotation patches at that rate, and returns
// the kubelet's CPU in each.
func KubeletCost(ctx context.Context, o KubeletCostOptions) ([]KubeletCostRow, error) {
	if len(o.Pods) == 0 || len(o.Values) < 2 || o.Window <= 0 || o.Rounds < 1 {
		return nil, errors.New("kubelet cost: pods, two values, a window and a round are required")
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	rows := make([]KubeletCostRow, len(o.Rates))
	for i, r := range o.Rates {
		rows[i].Rate = r
	}
	n := 0 // patches so far: picks the pod and the value
	// window returns the kubelet's cores over one window, the patches sent
	// in it, and its length in seconds.
	window := func(rate float64) (float64, int, float64, error) {
		start, err := processCPU(o.ProcRoot, o.KubeletPID)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("reading the kubelet's CPU time: %w", err)
		}
		t0 := time.Now()
		end := t0.Add(o.Window)
		patches := 0
		if rate > 0 {
			every := time.Duration(float64(time.Minute) / (rate * float64(len(o.Pods))))
			tick := time.NewTicker(every)
			for time.Now().Before(end) {
				select {
				case <-ctx.Done():
					tick.Stop()
					return 0, 0, 0, ctx.Err()
				case <-tick.C:
				}
				pod := o.Pods[n%len(o.Pods)]
				patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
					history.SnapshotAnnotation: o.Values[(n/len(o.Pods))%len(o.Values)]}}})
				if _, err := o.Client.CoreV1().Pods(o.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					tick.Stop()
					return 0, 0, 0, fmt.Errorf("patching pod %s: %w", pod.Name, err)
				}
				n++
				patches++
			}
			tick.Stop()
		} else {
			select {
			case <-ctx.Done():
				return 0, 0, 0, ctx.Err()
			case <-time.After(time.Until(end)):
			}
		}
		stop, err := processCPU(o.ProcRoot, o.KubeletPID)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("reading the kubelet's CPU time: %w", err)
		}
		secs := time.Since(t0).Seconds()
		return (stop - start).Seconds() / secs, patches, secs, nil
	}
	for round := range o.Rounds {
		base, _, _, err := window(0)
		if err != nil {
			return rows, err
		}
		for i := range rows {
			with, patches, secs, err := window(rows[i].Rate)
			if err != nil {
				return rows, err
			}
			rows[i].Base = append(rows[i].Base, base)
			rows[i].With = append(rows[i].With, with)
			rows[i].Patches = append(rows[i].Patches, patches)
			rows[i].Seconds = append(rows[i].Seconds, secs)
			if o.Log != nil {
				fmt.Fprintf(o.Log, "round %d: kubelet %.4f cores without writes, %.4f with %d patches (%.1f per pod a minute)\n",
					round+1, base, with, patches, rows[i].Rate)
			}
		}
	}
	for i := range rows {
		rows[i].MsPerPatch = msPerPatch(rows[i])
	}
	return rows, nil
}

// msPerPatch is the median over the rounds of (with - base) cores times
// the window as it ran, over the round's patches, in milliseconds.
func msPerPatch(r KubeletCostRow) float64 {
	var per []float64
	for i := range r.Patches {
		if r.Patches[i] > 0 {
			per = append(per, (r.With[i]-r.Base[i])*r.Seconds[i]*1000/float64(r.Patches[i]))
		}
	}
	if len(per) == 0 {
		return 0
	}
	slices.Sort(per)
	if len(per)%2 == 1 {
		return per[len(per)/2]
	}
	return (per[len(per)/2-1] + per[len(per)/2]) / 2
}
