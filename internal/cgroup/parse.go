package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxFileBytes bounds what the io.Reader parsers read. The largest cgroup
// file we parse (v2 memory.stat) is about 2 KiB.
const maxFileBytes = 1 << 20

var (
	errEmpty        = errors.New("empty file")
	errMissingValue = errors.New("missing value")
	errTooLarge     = errors.New("file too large")
	errOutOfRange   = errors.New("out of range")
	errFieldCount   = errors.New("wrong number of fields")
)

// ParseError reports a malformed cgroup file. It wraps strconv.ErrSyntax or
// strconv.ErrRange when a number is malformed.
type ParseError struct {
	// File is the base name of the file, e.g. "memory.stat".
	File string
	// Key is the flat key (e.g. "inactive_file") or, for PSI files, the
	// line and field (e.g. "some avg10"). It is empty for single-value
	// files.
	Key string
	// Value is the offending text, cut to 64 bytes.
	Value string
	Err   error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("parsing ")
	b.WriteString(e.File)
	if e.Key != "" {
		b.WriteString(": key ")
		b.WriteString(strconv.Quote(e.Key))
	}
	if e.Value != "" {
		b.WriteString(": value ")
		b.WriteString(strconv.Quote(e.Value))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

func newParseError(file string, key, value []byte, err error) *ParseError {
	const maxValue = 64
	if len(value) > maxValue {
		value = value[:maxValue]
	}
	if len(key) > maxValue {
		key = key[:maxValue]
	}
	return &ParseError{File: file, Key: string(key), Value: string(value), Err: err}
}

// readAll reads a whole cgroup file from r for the exported parsers. The
// Reader does not use it. It reads into a pooled buffer instead.
func readAll(file string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if len(b) > maxFileBytes {
		return nil, &ParseError{File: file, Err: errTooLarge}
	}
	return b, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// cutSpace splits b at its first run of blanks.
func cutSpace(b []byte) (head, tail []byte) {
	for i, c := range b {
		if isSpace(c) {
			return b[:i], trimSpace(b[i+1:])
		}
	}
	return b, nil
}

// lines walks a flat-keyed or nested-keyed file ("key value" per line). It
// skips blank lines and trims surrounding blanks, so trailing newlines and
// CRLF are harmless.
type lines struct{ rest []byte }

func (l *lines) next() (key, val []byte, ok bool) {
	for len(l.rest) > 0 {
		var line []byte
		if i := bytes.IndexByte(l.rest, '\n'); i >= 0 {
			line, l.rest = l.rest[:i], l.rest[i+1:]
		} else {
			line, l.rest = l.rest, nil
		}
		line = trimSpace(line)
		if len(line) == 0 {
			continue
		}
		key, val = cutSpace(line)
		return key, val, true
	}
	return nil, nil, false
}

// parseUint parses a decimal uint64 without allocating: the hot path parses
// about 60 numbers per container per second.
func parseUint(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errMissingValue
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, strconv.ErrRange
		}
		n = n*10 + d
	}
	return n, nil
}

// parseDecimal parses a non-negative decimal such as "12.34", the form PSI
// averages take. It rejects signs, exponents, NaN and Inf, so the result is
// always finite and non-negative. Values with up to 15 significant digits
// (every value the kernel prints) are correctly rounded: "23.41" gives the
// same float64 as the literal 23.41.
func parseDecimal(b []byte) (float64, error) {
	intPart, frac, hasDot := bytes.Cut(b, []byte{'.'})
	if len(intPart) == 0 || (hasDot && len(frac) == 0) {
		return 0, strconv.ErrSyntax
	}
	n, err := parseUint(intPart)
	if err != nil {
		return 0, err
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	const exact = 1 << 53 // integers up to here are exact in a float64
	if n >= exact {
		return float64(n), nil
	}
	mant, scale := n, 1.0
	for _, c := range frac {
		if mant >= exact/10 {
			break // further digits are below float64 precision
		}
		mant = mant*10 + uint64(c-'0')
		scale *= 10
	}
	return float64(mant) / scale, nil
}

// uintField parses the value of a flat key into *dst.
func uintField(file string, key, val []byte, dst *uint64) error {
	n, err := parseUint(val)
	if err != nil {
		return newParseError(file, key, val, err)
	}
	*dst = n
	return nil
}

// parseSingleUint parses a file holding one decimal number.
func parseSingleUint(file string, b []byte) (uint64, error) {
	v := trimSpace(b)
	if len(v) == 0 {
		return 0, &ParseError{File: file, Err: errEmpty}
	}
	n, err := parseUint(v)
	if err != nil {
		return 0, newParseError(file, nil, v, err)
	}
	return n, nil
}

// parsePressure parses a PSI file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// An empty file gives a zero Pressure. Unknown lines and fields are
// skipped.
func parsePressure(file string, b []byte) (Pressure, error) {
	var p Pressure
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			break
		}
		var dst *PressureLine
		switch string(key) {
		case "some":
			dst = &p.Some
		case "full":
			dst = &p.Full
			p.HasFull = true
		default:
			continue
		}
		if err := parsePressureLine(file, key, val, dst); err != nil {
			return Pressure{}, err
		}
	}
	return p, nil
}

func parsePressureLine(file string, line, b []byte, dst *PressureLine) error {
	for len(b) > 0 {
		var field []byte
		field, b = cutSpace(b)
		name, val, ok := bytes.Cut(field, []byte{'='})
		if !ok {
			return newParseError(file, line, field, strconv.ErrSyntax)
		}
		var (
			f   *float64
			err error
		)
		switch string(name) {
		case "avg10":
			f = &dst.Avg10Percent
		case "avg60":
			f = &dst.Avg60Percent
		case "avg300":
			f = &dst.Avg300Percent
		case "total":
			if dst.TotalMicros, err = parseUint(val); err != nil {
				return pressureFieldError(file, line, name, val, err)
			}
			continue
		default:
			continue
		}
		if *f, err = parseDecimal(val); err != nil {
			return pressureFieldError(file, line, name, val, err)
		}
	}
	return nil
}

func pressureFieldError(file string, line, name, val []byte, err error) error {
	key := make([]byte, 0, len(line)+1+len(name))
	key = append(append(append(key, line...), ' '), name...)
	return newParseError(file, key, val, err)
}
