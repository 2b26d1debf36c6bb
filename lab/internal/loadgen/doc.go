// Package loadgen is snug-load's engine: it burns a target number of CPU
// millicores and holds a target number of bytes of touched memory, and lets
// both targets change at run time through a control directory (polled) and
// an HTTP endpoint. It also holds the pause mode that the lab's pod sandbox
// image runs as PID 1.
//
// It owns the target syntax ("cpu=300m memory=100Mi", with its own quantity
// parser, so snug-load stays a small static binary of the standard library
// only), the duty-cycle burner, the memory holder and the control surfaces.
// It does not measure usage: what the container really gets is for the
// kubelet's cgroups and snug's agent to tell.
package loadgen
