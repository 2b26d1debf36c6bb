package trace

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// shownEvents drops the repeats of events that are not about resizing
// (such as the lab's MissingClusterDNS warning, which the kubelet repeats
// on every pod sync): only the first version of each reason per pod is
// kept. Every version of a resize event is kept: a repeated
// ResizeDeferred says the kubelet tried again.
func shownEvents(events []Event) []Event {
	seen := map[string]bool{}
	var out []Event
	for _, e := range events {
		key := e.PodUID + "/" + e.Pod + "/" + e.Reason
		if !e.Resize && seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}

// kubeletResize is the JSON the kubelet puts in its Resize* event
// messages since 1.35: the resources it is acting on, and for a deferred,
// infeasible or failed resize the error.
type kubeletResize struct {
	Containers []struct {
		Name      string                       `json:"name"`
		Resources map[string]map[string]string `json:"resources"`
	} `json:"containers"`
	Generation int64  `json:"generation"`
	Error      string `json:"error"`
}

// eventMessage shortens the kubelet's resize event messages, "Pod resize
// Deferred: {json}", to "Pod resize Deferred: app cpu 400m/400m mem
// 32Mi/32Mi, gen 2: Node didn't have enough resource: ..." (values are
// request/limit). Other messages are returned unchanged.
func eventMessage(msg string) string {
	i := strings.Index(msg, ": {")
	if i < 0 {
		return msg
	}
	var k kubeletResize
	if err := json.Unmarshal([]byte(msg[i+2:]), &k); err != nil || len(k.Containers) == 0 {
		return msg
	}
	var parts []string
	for _, c := range k.Containers {
		names := map[string]bool{}
		for _, l := range c.Resources {
			for n := range l {
				names[n] = true
			}
		}
		var rs []string
		for n := range names {
			rs = append(rs, n)
		}
		sort.Strings(rs)
		part := c.Name
		for _, n := range rs {
			req, lim := c.Resources["requests"][n], c.Resources["limits"][n]
			part += fmt.Sprintf(" %s %s/%s", shortName(n), orDash(req), orDash(lim))
		}
		parts = append(parts, part)
	}
	out := msg[:i] + ": " + strings.Join(parts, "; ")
	if k.Generation != 0 {
		out += fmt.Sprintf(", gen %d", k.Generation)
	}
	if k.Error != "" {
		out += ": " + k.Error
	}
	return out
}

func shortName(resource string) string {
	if resource == "memory" {
		return "mem"
	}
	return resource
}
