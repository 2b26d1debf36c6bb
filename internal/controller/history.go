package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
)

// Keys of a checkpoint ConfigMap's data besides history.AggregatePrefix.
const (
	// checkpointRetiredPrefix + container name: the merged last snapshots
	// of the pods that are gone.
	checkpointRetiredPrefix = "retired."
	// checkpointPodsKey: the last snapshot seen of each live pod, by UID,
	// as JSON.
	checkpointPodsKey = "pods.json"
)

// checkpoint is the workload's learnt history as kept in its ConfigMap.
type checkpoint struct {
	// retired is per container the merge of the last snapshots of the pods
	// that are gone, each merged once, when the pod was first seen gone.
	retired map[string]*recommend.Aggregate
	// pods is the last snapshot seen of each live pod.
	pods map[types.UID]history.Snapshot
	// evicted are the sizes of pods evicted for a Deferred resize, held
	// for their replacements (history.EvictedKey).
	evicted []history.Evicted
}

// decodeCheckpoint reads a checkpoint from ConfigMap data; nil data is an
// empty checkpoint.
func decodeCheckpoint(cfg recommend.Config, data map[string]string) (checkpoint, error) {
	cp := checkpoint{retired: map[string]*recommend.Aggregate{}, pods: map[types.UID]history.Snapshot{}}
	for k, v := range data {
		name, ok := strings.CutPrefix(k, checkpointRetiredPrefix)
		if !ok {
			continue
		}
		a := recommend.NewAggregate(cfg)
		if err := a.UnmarshalText([]byte(v)); err != nil {
			return checkpoint{}, fmt.Errorf("decoding %s: %w", k, err)
		}
		cp.retired[name] = a
	}
	if v, ok := data[checkpointPodsKey]; ok {
		if err := json.Unmarshal([]byte(v), &cp.pods); err != nil {
			return checkpoint{}, fmt.Errorf("decoding %s: %w", checkpointPodsKey, err)
		}
	}
	// A damaged record only loses replacements their floor, never the
	// history: it is dropped.
	cp.evicted, _ = history.CheckpointEvicted(data)
	return cp, nil
}

// encode writes the checkpoint and the workload aggregates as ConfigMap data.
func (cp checkpoint) encode(total map[string]*recommend.Aggregate) (map[string]string, error) {
	data := map[string]string{}
	put := func(prefix string, m map[string]*recommend.Aggregate) error {
		for name, a := range m {
			text, err := a.MarshalText()
			if err != nil {
				return fmt.Errorf("encoding %s%s: %w", prefix, name, err)
			}
			data[prefix+name] = string(text)
		}
		return nil
	}
	if err := put(checkpointRetiredPrefix, cp.retired); err != nil {
		return nil, err
	}
	if err := put(history.AggregatePrefix, total); err != nil {
		return nil, err
	}
	pods, err := json.Marshal(cp.pods)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", checkpointPodsKey, err)
	}
	data[checkpointPodsKey] = string(pods)
	if len(cp.evicted) > 0 {
		v, err := history.EncodeEvicted(cp.evicted)
		if err != nil {
			return nil, err
		}
		data[history.EvictedKey] = v
	}
	return data, nil
}

// fold brings the checkpoint up to date with the live pods' latest
// snapshots (live maps each live pod's UID to its snapshot, or to a zero
// Snapshot when it has published none) and returns it with the workload
// aggregate per container. Every snapshot is counted once: a live pod's
// latest snapshot replaces its earlier one (a snapshot holds the pod's
// whole history, so an older one is contained in it); a pod that is gone
// has its last snapshot merged into retired and is dropped from pods, in
// the same write. Snapshots that do not decode or merge (another
// half-life) are skipped and reported in the joined error; the rest is
// still folded.
func fold(cfg recommend.Config, prev checkpoint, live map[types.UID]history.Snapshot) (checkpoint, map[string]*recommend.Aggregate, error) {
	next := checkpoint{retired: map[string]*recommend.Aggregate{}, pods: map[types.UID]history.Snapshot{}}
	var errs []error
	for name, a := range prev.retired {
		c := recommend.NewAggregate(cfg)
		if err := c.Merge(a); err != nil {
			errs = append(errs, fmt.Errorf("copying retired %s: %w", name, err))
			continue
		}
		next.retired[name] = c
	}
	for uid, s := range live {
		if s.Time.IsZero() {
			if old, ok := prev.pods[uid]; ok {
				s = old
			} else {
				continue
			}
		}
		if old, ok := prev.pods[uid]; ok && old.Time.After(s.Time) {
			s = old
		}
		next.pods[uid] = s
	}
	for _, uid := range slices.Sorted(maps.Keys(prev.pods)) {
		if _, ok := live[uid]; ok {
			continue
		}
		errs = append(errs, mergeSnapshot(cfg, next.retired, prev.pods[uid]))
	}
	total := map[string]*recommend.Aggregate{}
	for name, a := range next.retired {
		c := recommend.NewAggregate(cfg)
		if err := c.Merge(a); err == nil {
			total[name] = c
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(next.pods)) {
		errs = append(errs, mergeSnapshot(cfg, total, next.pods[uid]))
	}
	return next, total, errors.Join(errs...)
}

// liveEvicted drops the eviction records that are done with: older than
// history.EvictedTTL, or taken up by a replacement (a pod whose admission
// annotation names the evicted pod).
func liveEvicted(list []history.Evicted, pods []*corev1.Pod, now time.Time) []history.Evicted {
	taken := map[string]bool{}
	for _, pod := range pods {
		if a, ok, err := history.ParseAdmission(pod); ok && err == nil && a.Evicted != "" {
			taken[a.Evicted] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(list), func(e history.Evicted) bool {
		return taken[e.Pod] || e.Expired(now)
	})
}

// mergeSnapshot merges each container of s into into[container].
func mergeSnapshot(cfg recommend.Config, into map[string]*recommend.Aggregate, s history.Snapshot) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.Containers)) {
		a := recommend.NewAggregate(cfg)
		if err := a.UnmarshalText([]byte(s.Containers[name])); err != nil {
			errs = append(errs, fmt.Errorf("decoding snapshot of container %s: %w", name, err))
			continue
		}
		dst, ok := into[name]
		if !ok {
			dst = recommend.NewAggregate(cfg)
		}
		if err := dst.Merge(a); err != nil {
			errs = append(errs, fmt.Errorf("merging snapshot of container %s: %w", name, err))
			continue
		}
		into[name] = dst
	}
	return errors.Join(errs...)
}

// recommendationFor computes status.recommendation from the workload
// aggregates, one entry per container in name order, with each
// container's bounds. Containers with no samples are left out; nil if none
// has any.
func recommendationFor(cfg recommend.Config, p *v1alpha1.SnugPolicy, uncontrolled []corev1.ResourceName, total map[string]*recommend.Aggregate, now time.Time) (*v1alpha1.RecommendedPodResources, error) {
	var out []v1alpha1.RecommendedContainerResources
	for _, name := range slices.Sorted(maps.Keys(total)) {
		a := total[name]
		if a.CPUSeconds == 0 && a.MemorySeconds == 0 {
			continue
		}
		r, err := a.Recommendation(cfg, policy.LearnBounds(policy.ContainerPolicy(p, name), uncontrolled), now)
		if err != nil {
			return nil, fmt.Errorf("recommending for container %s: %w", name, err)
		}
		list := func(cpuMillis, memBytes int64) corev1.ResourceList {
			return corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMillis, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memBytes, resource.BinarySI),
			}
		}
		out = append(out, v1alpha1.RecommendedContainerResources{
			ContainerName:  name,
			Target:         list(r.CPU.Target, r.Memory.Target),
			LowerBound:     list(r.CPU.LowerBound, r.Memory.LowerBound),
			UpperBound:     list(r.CPU.UpperBound, r.Memory.UpperBound),
			UncappedTarget: list(r.CPU.UncappedTarget, r.Memory.UncappedTarget),
		})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &v1alpha1.RecommendedPodResources{ContainerRecommendations: out}, nil
}
