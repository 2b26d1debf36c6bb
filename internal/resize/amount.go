package resize

import (
	"math"
	"math/bits"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// res indexes the two resources that can be resized in place.
type res int

const (
	cpu res = iota
	memory
)

var resources = [...]res{cpu, memory}

func (r res) name() corev1.ResourceName {
	if r == cpu {
		return corev1.ResourceCPU
	}
	return corev1.ResourceMemory
}

// unit is the word for one unit of r in messages.
func (r res) unit() string {
	if r == cpu {
		return "1m"
	}
	return "1 byte"
}

// amount is one request or limit in whole units: millicores for cpu, bytes
// for memory. set is false when the key is absent.
type amount struct {
	set   bool
	units int64
}

func some(units int64) amount { return amount{set: true, units: units} }

// pair is the request and the limit of one resource of one container.
type pair struct{ req, lim amount }

// values holds a container's cpu and memory pairs, indexed by res.
type values [2]pair

// toUnits turns a quantity into whole units of r, rounding up the way the
// kubelet does (MilliValue and Value both round up): a fraction of a
// millicore or of a byte can only be granted as a whole one.
func toUnits(r res, q resource.Quantity) int64 {
	if r == cpu {
		return q.MilliValue()
	}
	return q.Value()
}

// quantity turns units of r back into a canonical quantity. Memory keeps the
// format of the value it replaces (so "128Mi" stays binary), and is binary
// when there was none.
func quantity(r res, units int64, like *resource.Quantity) resource.Quantity {
	if r == cpu {
		return *resource.NewMilliQuantity(units, resource.DecimalSI)
	}
	format := resource.BinarySI
	if like != nil && like.Format != "" {
		format = like.Format
	}
	return *resource.NewQuantity(units, format)
}

// readValues reads the cpu and memory requests and limits of rr.
func readValues(rr corev1.ResourceRequirements) values {
	var v values
	for _, r := range resources {
		if q, ok := rr.Requests[r.name()]; ok {
			v[r].req = some(toUnits(r, q))
		}
		if q, ok := rr.Limits[r.name()]; ok {
			v[r].lim = some(toUnits(r, q))
		}
	}
	return v
}

// writeValues returns rr with its cpu and memory keys set from v. Unchanged
// quantities keep their original form; other resources are untouched. The
// lists are copies.
func writeValues(rr corev1.ResourceRequirements, v values) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{
		Requests: writeList(rr.Requests, v, false),
		Limits:   writeList(rr.Limits, v, true),
		Claims:   rr.Claims,
	}
	return out
}

func writeList(list corev1.ResourceList, v values, limits bool) corev1.ResourceList {
	var out corev1.ResourceList
	if list != nil {
		out = list.DeepCopy()
	}
	for _, r := range resources {
		a := v[r].req
		if limits {
			a = v[r].lim
		}
		if !a.set {
			continue
		}
		old, had := list[r.name()]
		if had && toUnits(r, old) == a.units {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		var like *resource.Quantity
		if had {
			like = &old
		}
		out[r.name()] = quantity(r, a.units, like)
	}
	return out
}

// mulDivCeil returns ceil(a*b/c) for non-negative a, b and positive c,
// saturating at math.MaxInt64.
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, rem := bits.Div64(hi, lo, uint64(c))
	if rem != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// mulDivFloor returns floor(a*b/c) for non-negative a, b and positive c,
// saturating at math.MaxInt64.
func mulDivFloor(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// scaleCeil returns ceil(units * factor), saturating at math.MaxInt64.
func scaleCeil(units int64, factor float64) int64 {
	f := math.Ceil(float64(units) * factor)
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	if f < 0 {
		return 0
	}
	return int64(f)
}

// format renders units of r as a canonical quantity string for messages.
func format(r res, units int64) string {
	q := quantity(r, units, nil)
	return q.String()
}
