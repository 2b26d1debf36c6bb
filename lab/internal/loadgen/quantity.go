package loadgen

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Limits on targets, so that a typo cannot ask for a million goroutines or
// an exabyte.
const (
	MaxCPUMillis = 1024 * 1000 // 1024 cores
	MaxMemBytes  = 1 << 40     // 1 TiB
)

// unit is a quantity suffix: the value is number * mul, in the target's
// base unit (millicores or bytes).
type unit struct {
	suffix string
	mul    int64
}

var (
	cpuUnits = []unit{{"", 1000}, {"m", 1}}
	memUnits = []unit{
		{"", 1},
		{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	}
)

// ParseCPU parses a Kubernetes-style CPU quantity ("300m", "1.5", "2") into
// millicores, rounding a fraction of a millicore up as Kubernetes does.
func ParseCPU(s string) (int64, error) {
	v, err := parseQuantity(s, cpuUnits, MaxCPUMillis)
	if err != nil {
		return 0, fmt.Errorf("parsing cpu %q: %w", s, err)
	}
	return v, nil
}

// ParseMemory parses a Kubernetes-style memory quantity ("100Mi", "1.5Gi",
// "500M", "104857600") into bytes, rounding a fraction of a byte up.
func ParseMemory(s string) (int64, error) {
	v, err := parseQuantity(s, memUnits, MaxMemBytes)
	if err != nil {
		return 0, fmt.Errorf("parsing memory %q: %w", s, err)
	}
	return v, nil
}

// parseQuantity parses a non-negative decimal number followed by one of
// units' suffixes, and returns ceil(number * mul), at most limit.
func parseQuantity(s string, units []unit, limit int64) (int64, error) {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(s)
	}
	num, suffix := s[:end], s[end:]
	var mul int64
	for _, u := range units {
		if u.suffix == suffix {
			mul = u.mul
		}
	}
	if mul == 0 {
		return 0, fmt.Errorf("unknown suffix %q", suffix)
	}
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" && frac == "" {
		return 0, errors.New("no number")
	}
	if strings.Contains(frac, ".") {
		return 0, errors.New("more than one decimal point")
	}
	// The digits without the point, as an integer, scaled by 10^len(frac).
	n, ok := new(big.Int).SetString("0"+whole+frac, 10)
	if !ok {
		return 0, errors.New("bad number")
	}
	n.Mul(n, big.NewInt(mul))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := new(big.Int).QuoRem(n, scale, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if q.Cmp(big.NewInt(limit)) > 0 {
		return 0, fmt.Errorf("more than the limit of %d", limit)
	}
	return q.Int64(), nil
}

// FormatCPU formats millicores the way ParseCPU reads them: whole cores as
// a plain number ("2"), anything else in millicores ("1500m").
func FormatCPU(millis int64) string {
	if millis%1000 == 0 {
		return strconv.FormatInt(millis/1000, 10)
	}
	return strconv.FormatInt(millis, 10) + "m"
}

// FormatMemory formats bytes with the largest binary suffix that divides
// them exactly ("100Mi"), or as a plain number of bytes.
func FormatMemory(bytes int64) string {
	if bytes == 0 {
		return "0"
	}
	for _, u := range []unit{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if bytes%u.mul == 0 {
			return strconv.FormatInt(bytes/u.mul, 10) + u.suffix
		}
	}
	return strconv.FormatInt(bytes, 10)
}
