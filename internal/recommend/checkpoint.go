package recommend

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// The checkpoint form of a Histogram, version 1 (all varints as in
// encoding/binary):
//
//	'S' 'H' 1            magic and version
//	scale                one byte
//	halfLifeMillis       uvarint, > 0
//	refUnixMillis        varint: the reference time
//	total                8 bytes, little-endian float64: total stored weight
//	n                    uvarint: number of non-empty buckets
//	n x (gap, weight)    uvarint bucket index gap (the first is the index
//	                     itself, later ones at least 1), uvarint weight in
//	                     1..2^20, relative to the heaviest bucket
//
// Bucket weights are quantized to 20 bits relative to the heaviest bucket
// (as VPA normalizes its checkpoints), and rescaled on decoding so that they
// sum to total. A CPU histogram spread over 10 cores takes about 320 bytes.
const (
	checkpointVersion = 1
	quantumMax        = 1 << 20
	maxHalfLifeMillis = int64(10 * 365 * 24 * time.Hour / time.Millisecond)
)

// MarshalBinary encodes the histogram in its compact checkpoint form.
// It never fails.
func (h *Histogram) MarshalBinary() ([]byte, error) {
	n, heaviest := 0, 0.0
	for i := h.first; i <= h.last; i++ {
		if h.weights[i] > 0 {
			n++
			heaviest = max(heaviest, h.weights[i])
		}
	}
	b := make([]byte, 0, 32+4*n)
	b = append(b, 'S', 'H', checkpointVersion, byte(h.scale))
	b = binary.AppendUvarint(b, uint64(h.halfLife/time.Millisecond))
	var ref int64
	if n > 0 {
		ref = h.ref.UnixMilli()
	}
	b = binary.AppendVarint(b, ref)
	total := h.total
	if n == 0 {
		total = 0
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(total))

	// Quantize first: buckets that round to zero are left out, and n must
	// count only the ones written.
	kept := 0
	for i := h.first; i <= h.last; i++ {
		if quantize(h.weights[i], heaviest) > 0 {
			kept++
		}
	}
	b = binary.AppendUvarint(b, uint64(kept))
	prev := -1
	for i := h.first; i <= h.last; i++ {
		q := quantize(h.weights[i], heaviest)
		if q == 0 {
			continue
		}
		if prev < 0 {
			b = binary.AppendUvarint(b, uint64(i))
		} else {
			b = binary.AppendUvarint(b, uint64(i-prev))
		}
		b = binary.AppendUvarint(b, q)
		prev = i
	}
	return b, nil
}

func quantize(w, heaviest float64) uint64 {
	if !(w > 0) || !(heaviest > 0) {
		return 0
	}
	return uint64(math.Round(w / heaviest * quantumMax))
}

// ErrBadCheckpoint is matched by every error UnmarshalBinary returns for
// malformed input.
var ErrBadCheckpoint = errors.New("bad histogram checkpoint")

// UnmarshalBinary replaces h with the histogram encoded in data by
// MarshalBinary. It never panics; on error h is unchanged and the error
// matches ErrBadCheckpoint.
func (h *Histogram) UnmarshalBinary(data []byte) error {
	d, err := decodeHistogram(data)
	if err != nil {
		return fmt.Errorf("decoding histogram checkpoint: %w", err)
	}
	*h = *d
	return nil
}

// decodeHistogram parses one histogram and checks that nothing follows it.
func decodeHistogram(data []byte) (*Histogram, error) {
	r := reader{b: data}
	h, err := r.histogram()
	if err != nil {
		return nil, err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadCheckpoint, len(r.b))
	}
	return h, nil
}

// reader decodes checkpoint fields; every method fails with
// ErrBadCheckpoint rather than panicking on short input.
type reader struct{ b []byte }

func (r *reader) bytes(n int) ([]byte, error) {
	if len(r.b) < n {
		return nil, fmt.Errorf("%w: truncated", ErrBadCheckpoint)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrBadCheckpoint)
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) varint() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrBadCheckpoint)
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) float() (float64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}

func (r *reader) histogram() (*Histogram, error) {
	head, err := r.bytes(4)
	if err != nil {
		return nil, err
	}
	if head[0] != 'S' || head[1] != 'H' {
		return nil, fmt.Errorf("%w: not a histogram", ErrBadCheckpoint)
	}
	if head[2] != checkpointVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadCheckpoint, head[2], checkpointVersion)
	}
	scale := Scale(head[3])
	if !scale.valid() {
		return nil, fmt.Errorf("%w: unknown scale %d", ErrBadCheckpoint, head[3])
	}
	hl, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if hl == 0 || hl > uint64(maxHalfLifeMillis) {
		return nil, fmt.Errorf("%w: half-life %dms out of range", ErrBadCheckpoint, hl)
	}
	ref, err := r.varint()
	if err != nil {
		return nil, err
	}
	// Keep the reference within a range time.Time round-trips exactly.
	const maxRef = 1 << 50
	if ref < -maxRef || ref > maxRef {
		return nil, fmt.Errorf("%w: reference time %d out of range", ErrBadCheckpoint, ref)
	}
	total, err := r.float()
	if err != nil {
		return nil, err
	}
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	h := NewHistogram(scale, time.Duration(hl)*time.Millisecond)
	if n > uint64(len(h.weights)) {
		return nil, fmt.Errorf("%w: %d buckets, the scale has %d", ErrBadCheckpoint, n, len(h.weights))
	}
	if n == 0 {
		if total != 0 || ref != 0 {
			return nil, fmt.Errorf("%w: empty histogram with weight or reference time", ErrBadCheckpoint)
		}
		return h, nil
	}
	// Real totals are near the number of samples times at most 2^50;
	// denormal or huge ones only come from corrupt input.
	if !(total >= 1e-200 && total <= 1e200) {
		return nil, fmt.Errorf("%w: total weight %v", ErrBadCheckpoint, total)
	}
	sum := 0.0
	idx := -1
	for k := uint64(0); k < n; k++ {
		gap, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if k > 0 && gap == 0 {
			return nil, fmt.Errorf("%w: bucket listed twice", ErrBadCheckpoint)
		}
		if gap >= uint64(len(h.weights)) || idx+int(gap) >= len(h.weights) {
			return nil, fmt.Errorf("%w: bucket index out of range", ErrBadCheckpoint)
		}
		if k == 0 {
			idx = int(gap)
		} else {
			idx += int(gap)
		}
		q, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if q == 0 || q > quantumMax {
			return nil, fmt.Errorf("%w: bucket weight %d out of range", ErrBadCheckpoint, q)
		}
		h.weights[idx] = float64(q)
		sum += float64(q)
		h.first = min(h.first, idx)
		h.last = max(h.last, idx)
	}
	f := total / sum
	h.total = 0
	for i := h.first; i <= h.last; i++ {
		h.weights[i] *= f
		h.total += h.weights[i]
	}
	h.ref = time.UnixMilli(ref)
	return h, nil
}

// MarshalText encodes the checkpoint form in standard base64, so a
// Histogram can sit in a JSON or YAML document (a status, a ConfigMap).
func (h *Histogram) MarshalText() ([]byte, error) {
	b, _ := h.MarshalBinary()
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(out, b)
	return out, nil
}

// UnmarshalText decodes what MarshalText produced.
func (h *Histogram) UnmarshalText(text []byte) error {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(b, text)
	if err != nil {
		return fmt.Errorf("decoding histogram checkpoint: %w: %w", ErrBadCheckpoint, err)
	}
	return h.UnmarshalBinary(b[:n])
}
