// Package labcli holds the commands of snug-lab, one file each: the lab
// (a real single-node Kubernetes on this machine, and upstream VPA on it),
// the demo and the benches. It is no part of the product binaries (snug,
// snug-agent, snug-controller); their dependency tests keep it out.
package labcli
