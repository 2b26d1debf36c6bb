package loadgen

import (
	"fmt"
	"io"
	"strings"
)

// Targets is what the generator burns and holds. The zero value is idle.
type Targets struct {
	CPUMillis int64
	MemBytes  int64
	// CacheBytes is the file kept in the page cache and read over and
	// over (Cache).
	CacheBytes int64
}

// String returns the targets as the control syntax and log line,
// e.g. "cpu=300m memory=100Mi" ("cache=..." follows when it is set).
func (t Targets) String() string {
	s := "cpu=" + FormatCPU(t.CPUMillis) + " memory=" + FormatMemory(t.MemBytes)
	if t.CacheBytes > 0 {
		s += " cache=" + FormatMemory(t.CacheBytes)
	}
	return s
}

// Update changes some targets; a nil field leaves that target as it is.
type Update struct {
	CPUMillis  *int64
	MemBytes   *int64
	CacheBytes *int64
}

// Empty reports whether u changes nothing.
func (u Update) Empty() bool { return u.CPUMillis == nil && u.MemBytes == nil && u.CacheBytes == nil }

// Apply returns t with u's fields set.
func (u Update) Apply(t Targets) Targets {
	if u.CPUMillis != nil {
		t.CPUMillis = *u.CPUMillis
	}
	if u.MemBytes != nil {
		t.MemBytes = *u.MemBytes
	}
	if u.CacheBytes != nil {
		t.CacheBytes = *u.CacheBytes
	}
	return t
}

// Set sets key ("cpu", "memory" or "cache") to the quantity value.
func (u *Update) Set(key, value string) error {
	switch key {
	case "cpu":
		return setOnce(&u.CPUMillis, key, value, ParseCPU)
	case "memory":
		return setOnce(&u.MemBytes, key, value, ParseMemory)
	case "cache":
		return setOnce(&u.CacheBytes, key, value, ParseMemory)
	default:
		return fmt.Errorf("unknown key %q (want cpu, memory or cache)", key)
	}
}

// setOnce sets *dst to value parsed, unless key was given already.
func setOnce(dst **int64, key, value string, parse func(string) (int64, error)) error {
	if *dst != nil {
		return fmt.Errorf("%s given twice", key)
	}
	v, err := parse(value)
	if err != nil {
		return err
	}
	*dst = &v
	return nil
}

// maxSpecBytes bounds a control file; real ones are a few dozen bytes.
const maxSpecBytes = 4096

// ParseUpdate reads the control syntax: key=value pairs separated by
// spaces, commas, semicolons or newlines, e.g. "cpu=300m memory=100Mi".
// Any key may be left out. A '#' starts a comment to the end of the line.
func ParseUpdate(r io.Reader) (Update, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return Update{}, err
	}
	if len(data) > maxSpecBytes {
		return Update{}, fmt.Errorf("more than %d bytes", maxSpecBytes)
	}
	var u Update
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, f := range strings.FieldsFunc(line, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\r' || r == ',' || r == ';'
		}) {
			key, value, ok := strings.Cut(f, "=")
			if !ok {
				return Update{}, fmt.Errorf("%q is not key=value", f)
			}
			if err := u.Set(key, value); err != nil {
				return Update{}, err
			}
		}
	}
	return u, nil
}
