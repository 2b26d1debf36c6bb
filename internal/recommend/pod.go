package recommend

import (
	"fmt"
	"time"

	"github.com/snug-dev/snug/internal/resize"
)

// Pod is the recommender state of one pod: its containers, the pod's resize
// budget (at most Config.MaxResizesPerHour resizes in any sliding hour), and
// the backoff after failed resizes. The agent keeps one Pod per pod it
// watches, feeds each container's samples to Container.Observe, sends one
// resize for all containers that asked for a change, and reports it with
// Sent and later Feedback.
//
// A Pod and its Containers are not safe for concurrent use.
type Pod struct {
	cfg        Config
	containers []*Container

	// resizes is a ring of the times of the last MaxResizesPerHour resizes,
	// oldest at head.
	resizes []time.Time
	head, n int

	backoffUntil time.Time
	backoffStep  time.Duration
	lastFailure  resize.Outcome
	lastFailAt   time.Time
}

// NewPod returns an empty Pod. cfg must be valid.
func NewPod(cfg Config) (*Pod, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("creating pod recommender: %w", err)
	}
	return &Pod{cfg: cfg, resizes: make([]time.Time, cfg.MaxResizesPerHour)}, nil
}

// Config returns the pod's configuration.
func (p *Pod) Config() Config { return p.cfg }

// AddContainer starts recommending for a container. seed, if not nil, is the
// workload's learnt usage for this container name (see Aggregate): the
// container's percentiles start from it and it needs no warm-up. The seed's
// weight decays like the container's own, so the container's own samples
// take over within a few half-lives; the seed is copied, not kept.
func (p *Pod) AddContainer(name string, b Bounds, seed *Aggregate) (*Container, error) {
	if p.Container(name) != nil {
		return nil, fmt.Errorf("adding container %q: already added", name)
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("adding container %q: %w", name, err)
	}
	c := &Container{
		name:        name,
		pod:         p,
		cfg:         &p.cfg,
		bounds:      b,
		cpu:         resource{hist: NewHistogram(ScaleCPUMillis, p.cfg.CPUHalfLife)},
		mem:         resource{memory: true, hist: NewHistogram(ScaleMemBytes, p.cfg.MemoryHalfLife)},
		peak:        newWindowMax(p.cfg.MemoryPeakWindow),
		dayPeak:     newWindowMax(p.cfg.RegrowWindow),
		recent:      newWindowMax(p.cfg.ShrinkWindow),
		recentUsage: newWindowMax(p.cfg.ShrinkWindow),
	}
	c.cpuMeans = NewHistogram(ScaleCPUMillis, p.cfg.CPUHalfLife)
	c.resetRun()
	if seed != nil {
		if err := seed.Compatible(p.cfg); err != nil {
			return nil, fmt.Errorf("adding container %q: %w", name, err)
		}
		if !seed.CPU.Empty() {
			c.cpu.seed, c.cpu.seedSeconds = seed.CPU.Clone(), seed.CPUSeconds
		}
		if !seed.Memory.Empty() {
			c.mem.seed, c.mem.seedSeconds = seed.Memory.Clone(), seed.MemorySeconds
		}
		if seed.MemoryPeakBytes > 0 {
			c.peak.add(seed.MemoryPeakTime, float64(seed.MemoryPeakBytes))
		}
	}
	p.containers = append(p.containers, c)
	return c, nil
}

// Container returns the named container, or nil.
func (p *Pod) Container(name string) *Container {
	for _, c := range p.containers {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Containers returns the pod's containers in the order they were added.
func (p *Pod) Containers() []*Container { return append([]*Container(nil), p.containers...) }

// RemoveContainer forgets a container.
func (p *Pod) RemoveContainer(name string) {
	for i, c := range p.containers {
		if c.name == name {
			p.containers = append(p.containers[:i], p.containers[i+1:]...)
			return
		}
	}
}

// Sent records that one resize was sent at now, carrying the latest
// decision of every container whose decision was not Hold. It spends one
// resize of the hourly budget; those resources wait for the outcome (their
// decisions say InFlight) until Feedback, until the current resources show
// a change, or until Config.InFlightTimeout.
func (p *Pod) Sent(now time.Time) {
	p.record(now)
	for _, c := range p.containers {
		c.sent(now)
	}
}

// Feedback is what became of a sent resize.
type Feedback struct {
	// Outcome is the resize's outcome.
	Outcome resize.Outcome
	// Caps, for Deferred and Infeasible, are the largest requests that
	// would have fitted, per container: from the planner with
	// resize.NoRoomCap, or from the node's room. A zero value means unknown;
	// the recommender then assumes half the way from the old request to the
	// one sent.
	Caps []Cap
	// CapBy, when set, names what capped (the namespace's quota, a
	// refusal) in place of the outcome in the reasons of the capped
	// decisions.
	CapBy string
}

// Cap is the largest request a container can have on its node for now, in
// millicores and bytes; 0 means not known or not capped.
type Cap struct {
	Container string
	CPUMillis int64
	MemBytes  int64
}

// Feedback reports the outcome of the resize last Sent:
//
//   - Applied ends the wait and resets the backoff.
//   - Deferred and Infeasible end the wait and cap the containers' targets
//     at the reported caps, for DeferredCapTTL or InfeasibleCapTTL: the
//     next decisions ask only for what fits. Infeasible is never retried
//     above its cap while the cap lasts; the caller reverts the spec.
//   - InProgress (reported when the caller gives up waiting), Error,
//     Rejected and Timeout end the wait and back off: no resize for
//     BackoffInitial, doubling per failure up to BackoffMax. They are never
//     remembered as caps.
//   - Conflict ends the wait with no backoff: re-read the pod and decide
//     again.
func (p *Pod) Feedback(now time.Time, f Feedback) {
	switch f.Outcome {
	case resize.Applied:
		p.backoffStep, p.backoffUntil = 0, time.Time{}
	case resize.Deferred, resize.Infeasible:
		ttl := p.cfg.DeferredCapTTL
		if f.Outcome == resize.Infeasible {
			ttl = p.cfg.InfeasibleCapTTL
		}
		for _, c := range p.containers {
			var capCPU, capMem int64
			for _, cp := range f.Caps {
				if cp.Container == c.name {
					capCPU, capMem = cp.CPUMillis, cp.MemBytes
				}
			}
			by := f.CapBy
			if by == "" {
				by = f.Outcome.String()
			}
			c.cpu.applyCap(now, capCPU, ttl, by)
			c.mem.applyCap(now, capMem, ttl, by)
		}
	case resize.InProgress, resize.Error, resize.Rejected, resize.Timeout:
		p.fail(now, f.Outcome)
	case resize.Conflict:
	default:
		return
	}
	for _, c := range p.containers {
		c.cpu.inFlight, c.mem.inFlight = false, false
	}
}

// applyCap remembers a cap for a resource that was part of the resize.
func (r *resource) applyCap(now time.Time, value int64, ttl time.Duration, by string) {
	if value <= 0 {
		if !r.inFlight || r.sentToReq <= r.sentFromReq {
			return
		}
		value = r.sentFromReq + (r.sentToReq-r.sentFromReq)/2
	}
	r.capValue, r.capUntil, r.capOutcome = value, now.Add(ttl), by
}

// fail starts or lengthens the backoff. Failures reported at the same
// instant count once.
func (p *Pod) fail(now time.Time, o resize.Outcome) {
	p.lastFailure = o
	if now.Equal(p.lastFailAt) && !p.lastFailAt.IsZero() {
		return
	}
	p.lastFailAt = now
	if p.backoffStep == 0 {
		p.backoffStep = p.cfg.BackoffInitial
	} else {
		p.backoffStep = min(2*p.backoffStep, p.cfg.BackoffMax)
	}
	p.backoffUntil = now.Add(p.backoffStep)
}

func (p *Pod) record(now time.Time) {
	size := len(p.resizes)
	if p.n < size {
		p.resizes[(p.head+p.n)%size] = now
		p.n++
		return
	}
	p.resizes[p.head] = now
	p.head = (p.head + 1) % size
}

// inWindow returns the index (from the oldest) of the first resize still
// within the hour before now.
func (p *Pod) inWindow(now time.Time) int {
	size := len(p.resizes)
	k := 0
	for k < p.n && now.Sub(p.resizes[(p.head+k)%size]) >= time.Hour {
		k++
	}
	return k
}

// ResizesInLastHour returns how many resizes were sent in the hour before
// now.
func (p *Pod) ResizesInLastHour(now time.Time) int { return p.n - p.inWindow(now) }

func (p *Pod) remaining(now time.Time) int { return len(p.resizes) - p.ResizesInLastHour(now) }

// waitFor returns how long until at least need resizes are left.
func (p *Pod) waitFor(now time.Time, need int) time.Duration {
	k := p.inWindow(now)
	used := p.n - k
	expire := used - (len(p.resizes) - need) // how many must leave the window
	if expire <= 0 {
		return 0
	}
	t := p.resizes[(p.head+k+expire-1)%len(p.resizes)]
	return t.Add(time.Hour).Sub(now)
}
