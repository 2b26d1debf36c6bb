package recommend

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Aggregate is what a workload has learnt about one of its containers (by
// name): the merge of its pods' histograms and their memory peak. The
// controller builds it from the pods' snapshots (Container.Snapshot),
// checkpoints it (MarshalBinary, a few hundred bytes), and hands it to new
// pods as their starting point (Pod.AddContainer).
//
// Merging adds weights. To keep a workload aggregate right, merge each pod's
// latest snapshot once into a fresh Aggregate (plus the checkpoint of pods
// that are gone, which decays on its own); merging the same pod's snapshot
// twice counts its history twice. A container's snapshot never includes the
// seed it started from, so seeds do not feed back.
//
// The zero value is not usable; use NewAggregate. Not safe for concurrent use.
type Aggregate struct {
	// CPU holds millicores, Memory working-set bytes.
	CPU, Memory *Histogram
	// CPUSeconds and MemorySeconds are how many seconds of samples went into
	// each histogram (not decayed), the confidence behind the estimates.
	CPUSeconds, MemorySeconds float64
	// MemoryPeakBytes is the largest working set seen within the memory
	// peak window, at MemoryPeakTime; 0 if none.
	MemoryPeakBytes int64
	MemoryPeakTime  time.Time
}

// NewAggregate returns an empty aggregate with cfg's half-lives.
func NewAggregate(cfg Config) *Aggregate {
	return &Aggregate{
		CPU:    NewHistogram(ScaleCPUMillis, cfg.CPUHalfLife),
		Memory: NewHistogram(ScaleMemBytes, cfg.MemoryHalfLife),
	}
}

// Compatible reports why a cannot seed or merge with containers of cfg: it
// lacks histograms, or their half-lives differ from cfg's.
func (a *Aggregate) Compatible(cfg Config) error {
	if a.CPU == nil || a.Memory == nil {
		return fmt.Errorf("aggregate has no histograms")
	}
	if a.CPU.Scale() != ScaleCPUMillis || a.Memory.Scale() != ScaleMemBytes {
		return fmt.Errorf("aggregate histograms have scales %v and %v, want cpu and memory", a.CPU.Scale(), a.Memory.Scale())
	}
	if a.CPU.HalfLife() != cfg.CPUHalfLife || a.Memory.HalfLife() != cfg.MemoryHalfLife {
		return fmt.Errorf("aggregate half-lives %v and %v differ from the config's %v and %v",
			a.CPU.HalfLife(), a.Memory.HalfLife(), cfg.CPUHalfLife, cfg.MemoryHalfLife)
	}
	return nil
}

// Snapshot returns what this container has learnt by itself (its seed
// left out), at now, as an Aggregate.
func (c *Container) Snapshot(now time.Time) *Aggregate {
	a := &Aggregate{
		CPU:           c.cpu.hist.Clone(),
		Memory:        c.mem.hist.Clone(),
		CPUSeconds:    c.cpu.observedSeconds,
		MemorySeconds: c.mem.observedSeconds,
	}
	if m := c.peak.max(now); m > 0 {
		a.MemoryPeakBytes, a.MemoryPeakTime = int64(m), c.peak.peakTime(now)
	}
	return a
}

// Merge adds b into a: histograms, seconds, and the larger peak.
func (a *Aggregate) Merge(b *Aggregate) error {
	if err := a.CPU.Merge(b.CPU); err != nil {
		return fmt.Errorf("merging aggregates: %w", err)
	}
	if err := a.Memory.Merge(b.Memory); err != nil {
		return fmt.Errorf("merging aggregates: %w", err)
	}
	a.CPUSeconds += b.CPUSeconds
	a.MemorySeconds += b.MemorySeconds
	if b.MemoryPeakBytes > a.MemoryPeakBytes ||
		(b.MemoryPeakBytes == a.MemoryPeakBytes && b.MemoryPeakTime.After(a.MemoryPeakTime)) {
		a.MemoryPeakBytes, a.MemoryPeakTime = b.MemoryPeakBytes, b.MemoryPeakTime
	}
	return nil
}

// Recommendation returns the workload-level estimate at now: the
// recommendation a new pod's container seeded with a starts from, under the
// given bounds.
func (a *Aggregate) Recommendation(cfg Config, b Bounds, now time.Time) (Recommendation, error) {
	p, err := NewPod(cfg)
	if err != nil {
		return Recommendation{}, err
	}
	c, err := p.AddContainer("aggregate", b, a)
	if err != nil {
		return Recommendation{}, err
	}
	return c.Recommendation(now), nil
}

// MarshalBinary encodes the aggregate: 'S' 'A' 1, then the CPU and memory
// histogram checkpoints each prefixed by its uvarint length, the two
// seconds as float64, the peak bytes as uvarint and its time as varint
// Unix milliseconds.
func (a *Aggregate) MarshalBinary() ([]byte, error) {
	cpu, _ := a.CPU.MarshalBinary()
	mem, _ := a.Memory.MarshalBinary()
	b := make([]byte, 0, 3+len(cpu)+len(mem)+40)
	b = append(b, 'S', 'A', checkpointVersion)
	b = binary.AppendUvarint(b, uint64(len(cpu)))
	b = append(b, cpu...)
	b = binary.AppendUvarint(b, uint64(len(mem)))
	b = append(b, mem...)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.CPUSeconds))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.MemorySeconds))
	b = binary.AppendUvarint(b, uint64(max(a.MemoryPeakBytes, 0)))
	var at int64
	if a.MemoryPeakBytes > 0 {
		at = a.MemoryPeakTime.UnixMilli()
	}
	b = binary.AppendVarint(b, at)
	return b, nil
}

// UnmarshalBinary replaces a with the aggregate encoded in data. It never
// panics; on error a is unchanged and the error matches ErrBadCheckpoint.
func (a *Aggregate) UnmarshalBinary(data []byte) error {
	out, err := decodeAggregate(data)
	if err != nil {
		return fmt.Errorf("decoding aggregate checkpoint: %w", err)
	}
	*a = *out
	return nil
}

func decodeAggregate(data []byte) (*Aggregate, error) {
	r := reader{b: data}
	head, err := r.bytes(3)
	if err != nil {
		return nil, err
	}
	if head[0] != 'S' || head[1] != 'A' || head[2] != checkpointVersion {
		return nil, fmt.Errorf("%w: not a version %d aggregate", ErrBadCheckpoint, checkpointVersion)
	}
	var hs [2]*Histogram
	for i := range hs {
		n, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(r.b)) {
			return nil, fmt.Errorf("%w: truncated", ErrBadCheckpoint)
		}
		body, _ := r.bytes(int(n))
		if hs[i], err = decodeHistogram(body); err != nil {
			return nil, err
		}
	}
	if hs[0].Scale() != ScaleCPUMillis || hs[1].Scale() != ScaleMemBytes {
		return nil, fmt.Errorf("%w: histograms out of order", ErrBadCheckpoint)
	}
	out := &Aggregate{CPU: hs[0], Memory: hs[1]}
	for _, p := range []*float64{&out.CPUSeconds, &out.MemorySeconds} {
		if *p, err = r.float(); err != nil {
			return nil, err
		}
		if !(*p >= 0) || math.IsInf(*p, 0) {
			return nil, fmt.Errorf("%w: seconds %v", ErrBadCheckpoint, *p)
		}
	}
	peak, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if peak > math.MaxInt64/2 {
		return nil, fmt.Errorf("%w: peak %d out of range", ErrBadCheckpoint, peak)
	}
	at, err := r.varint()
	if err != nil {
		return nil, err
	}
	const maxRef = 1 << 50
	if at < -maxRef || at > maxRef || (peak == 0 && at != 0) {
		return nil, fmt.Errorf("%w: peak time %d out of range", ErrBadCheckpoint, at)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadCheckpoint, len(r.b))
	}
	out.MemoryPeakBytes = int64(peak)
	if peak > 0 {
		out.MemoryPeakTime = time.UnixMilli(at)
	}
	return out, nil
}

// MarshalText encodes the aggregate in standard base64.
func (a *Aggregate) MarshalText() ([]byte, error) {
	b, _ := a.MarshalBinary()
	return []byte(base64.StdEncoding.EncodeToString(b)), nil
}

// UnmarshalText decodes what MarshalText produced.
func (a *Aggregate) UnmarshalText(text []byte) error {
	b, err := base64.StdEncoding.DecodeString(string(text))
	if err != nil {
		return fmt.Errorf("decoding aggregate checkpoint: %w: %w", ErrBadCheckpoint, err)
	}
	return a.UnmarshalBinary(b)
}
