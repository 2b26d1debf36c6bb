package agent

// ring is a fixed-capacity buffer of the most recent points, oldest first.
// The zero value holds nothing; use newRing. It is not safe for concurrent
// use: the Agent guards it with its mutex.
type ring struct {
	buf  []Point
	next int // index the next push writes
	full bool
}

func newRing(capacity int) *ring { return &ring{buf: make([]Point, capacity)} }

func (r *ring) push(p Point) {
	r.buf[r.next] = p
	r.next++
	if r.next == len(r.buf) {
		r.next = 0
		r.full = true
	}
}

func (r *ring) len() int {
	if r.full {
		return len(r.buf)
	}
	return r.next
}

// at returns the i-th point, 0 being the oldest held.
func (r *ring) at(i int) Point {
	if r.full {
		return r.buf[(r.next+i)%len(r.buf)]
	}
	return r.buf[i]
}

// latest returns the newest point, or false if the ring is empty.
func (r *ring) latest() (Point, bool) {
	n := r.len()
	if n == 0 {
		return Point{}, false
	}
	return r.at(n - 1), true
}

// appendRecent appends to dst the points taken after since (all if since is
// zero), at most limit of them (all if limit <= 0), the newest kept when the
// limit cuts, in time order.
func (r *ring) appendRecent(dst []Point, since int64, limit int) []Point {
	n := r.len()
	first := n
	for first > 0 && (since == 0 || r.at(first-1).Time.UnixNano() > since) {
		first--
		if limit > 0 && n-first == limit {
			break
		}
	}
	for i := first; i < n; i++ {
		dst = append(dst, r.at(i))
	}
	return dst
}
