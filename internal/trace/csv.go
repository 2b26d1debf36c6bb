package trace

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// csvHeader names the columns of WriteCSV. Quantities are whole
// millicores (_m) and bytes; an empty cell is a value not set or not
// reported.
var csvHeader = []string{
	"t_seconds", "time", "cause", "pod", "uid", "container",
	"generation", "observed_generation", "outcome",
	"desired_cpu_request_m", "desired_cpu_limit_m", "desired_mem_request_bytes", "desired_mem_limit_bytes",
	"allocated_cpu_request_m", "allocated_mem_request_bytes",
	"actual_cpu_request_m", "actual_cpu_limit_m", "actual_mem_request_bytes", "actual_mem_limit_bytes",
	"usage_cpu_m", "usage_mem_bytes", "usage_throttled_fraction",
	"restart_count", "container_id", "state",
	"resize_pending", "resize_pending_message", "resize_in_progress", "resize_in_progress_message",
	"deleted",
}

// WriteCSV writes one row per sample per container; t_seconds counts from
// origin (the start of the trace when zero).
func WriteCSV(w io.Writer, r *Recording, origin time.Time) error {
	if origin.IsZero() {
		origin = r.Started
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("writing csv: %w", err)
	}
	num := func(v int64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	for _, s := range r.Samples {
		pending, pendingMsg, progress, progressMsg := "", "", "", ""
		for _, c := range s.Conditions {
			if c.Status != "True" {
				continue
			}
			switch c.Type {
			case "PodResizePending":
				pending, pendingMsg = orTrue(c.Reason), c.Message
			case "PodResizeInProgress":
				progress, progressMsg = orTrue(c.Reason), c.Message
			}
		}
		for _, c := range s.Containers {
			rec := []string{
				strconv.FormatFloat(s.At.Sub(origin).Seconds(), 'f', 3, 64),
				s.At.UTC().Format(time.RFC3339Nano),
				string(s.Cause), s.Pod, s.UID, c.Name,
				strconv.FormatInt(s.Generation, 10), strconv.FormatInt(s.ObservedGeneration, 10), s.Outcome,
				num(c.Desired.CPURequestMillis), num(c.Desired.CPULimitMillis), num(c.Desired.MemoryRequestBytes), num(c.Desired.MemoryLimitBytes),
			}
			if a := c.Allocated; a != nil {
				rec = append(rec, num(a.CPURequestMillis), num(a.MemoryRequestBytes))
			} else {
				rec = append(rec, "", "")
			}
			if a := c.Actual; a != nil {
				rec = append(rec, num(a.CPURequestMillis), num(a.CPULimitMillis), num(a.MemoryRequestBytes), num(a.MemoryLimitBytes))
			} else {
				rec = append(rec, "", "", "", "")
			}
			if u := c.Usage; u != nil {
				rec = append(rec, strconv.FormatFloat(u.CPUMillis, 'f', 1, 64), strconv.FormatInt(u.MemoryBytes, 10), strconv.FormatFloat(u.ThrottledFraction, 'f', 4, 64))
			} else {
				rec = append(rec, "", "", "")
			}
			rec = append(rec, strconv.Itoa(int(c.RestartCount)), c.ContainerID, c.State,
				pending, oneLine(pendingMsg), progress, oneLine(progressMsg), strconv.FormatBool(s.Deleted))
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("writing csv: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing csv: %w", err)
	}
	return nil
}

// orTrue is a condition's reason, or "True" when it has none (an
// in-progress resize).
func orTrue(reason string) string {
	if reason == "" {
		return "True"
	}
	return reason
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
