package trace

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cpuString formats millicores as Kubernetes does: "250m", "2", "-" for
// not set.
func cpuString(millis int64) string {
	switch {
	case millis == 0:
		return "-"
	case millis%1000 == 0:
		return strconv.FormatInt(millis/1000, 10)
	}
	return strconv.FormatInt(millis, 10) + "m"
}

// memString formats bytes with the largest binary suffix that divides
// them: "128Mi", "1Gi", "-" for not set.
func memString(b int64) string {
	if b == 0 {
		return "-"
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b%u.size == 0 {
			return strconv.FormatInt(b/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}

// cpuPair is "request/limit".
func (r Resources) cpuPair() string {
	return cpuString(r.CPURequestMillis) + "/" + cpuString(r.CPULimitMillis)
}

func (r Resources) memPair() string {
	return memString(r.MemoryRequestBytes) + "/" + memString(r.MemoryLimitBytes)
}

// String is "cpu 250m/500m mem 128Mi/128Mi" (request/limit).
func (r Resources) String() string { return "cpu " + r.cpuPair() + " mem " + r.memPair() }

// requestsString is "cpu 250m mem 128Mi", for allocated resources, which
// have no limits.
func (r Resources) requestsString() string {
	return "cpu " + cpuString(r.CPURequestMillis) + " mem " + memString(r.MemoryRequestBytes)
}

// relTime formats d as "t+3.4s" (or "t-1.2s" before the origin).
func relTime(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("t%s%.1fs", sign, d.Seconds())
}

// shortMessage cuts a message to n runes.
func shortMessage(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
