package lab

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The User-Mode Linux kernel's management console (CONFIG_MCONSOLE, on in
// uml/kernel.config): a Unix datagram socket at <uml_dir>/<umid>/mconsole
// that takes one command per request ("version", "sysrq t", "stack
// <pid>") and answers in one or more replies. Its "sysrq" runs in the
// kernel's interrupt handler with a console that copies the output into
// the replies, so it answers even while the kernel spins in process
// context: what a hung guest was doing can be read before it is killed.
// The format is arch/um/include/shared/mconsole.h's (version 2, the host's
// byte order); uml-utilities' uml_mconsole speaks the same, and a client
// this small is not worth a package.
const (
	mconsoleMagic   = 0xcafebabe
	mconsoleVersion = 2
	mconsoleMaxData = 512
)

// v2Mconsole is the running guest's management console socket.
func (o *Options) v2Mconsole() string { return o.v2Path("uml", o.V2.Name, "mconsole") }

// mconsoleCommand sends cmd to the mconsole socket at sock and returns the
// text of its replies, joined, within timeout. An error reply (err != 0)
// is an error with its text.
func mconsoleCommand(sock, cmd string, timeout time.Duration) (string, error) {
	if len(cmd) >= mconsoleMaxData {
		return "", fmt.Errorf("mconsole command of %d bytes: at most %d", len(cmd), mconsoleMaxData-1)
	}
	dir, err := os.MkdirTemp("", "snug-mconsole-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	// A datagram socket needs an address of its own for the replies.
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "c"), Net: "unixgram"})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	req := make([]byte, 12+mconsoleMaxData)
	binary.NativeEndian.PutUint32(req[0:], mconsoleMagic)
	binary.NativeEndian.PutUint32(req[4:], mconsoleVersion)
	binary.NativeEndian.PutUint32(req[8:], uint32(len(cmd)))
	copy(req[12:], cmd)
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := conn.WriteToUnix(req, &net.UnixAddr{Name: sock, Net: "unixgram"}); err != nil {
		return "", fmt.Errorf("mconsole %q: %w", cmd, err)
	}
	var out strings.Builder
	buf := make([]byte, 12+mconsoleMaxData)
	for {
		n, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			if out.Len() > 0 {
				return out.String(), fmt.Errorf("mconsole %q: the reply stopped: %w", cmd, err)
			}
			return "", fmt.Errorf("mconsole %q: no reply: %w", cmd, err)
		}
		if n < 12 {
			return out.String(), fmt.Errorf("mconsole %q: a reply of %d bytes", cmd, n)
		}
		code := binary.NativeEndian.Uint32(buf[0:])
		more := binary.NativeEndian.Uint32(buf[4:])
		size := int(binary.NativeEndian.Uint32(buf[8:]))
		size = min(size, n-12)
		text := strings.TrimRight(string(buf[12:12+size]), "\x00")
		out.WriteString(text)
		if code != 0 {
			return out.String(), errors.New("mconsole " + cmd + ": " + strings.TrimSpace(text))
		}
		if more == 0 {
			return out.String(), nil
		}
	}
}

// V2KernelState asks the running guest's kernel, through its mconsole,
// for its registers and every task's stack (sysrq p and t), for the record
// of a hang. A kernel that spins with its interrupts off (UML blocks its
// signals) does not answer; then its process's stack is read from the
// host, a few times, with gdb (frame pointers are on) and named from the
// kernel's symbols the guest wrote at boot (state/kallsyms). Best effort:
// what could not be had is said in the text. pid is the guest's kernel
// process.
func V2KernelState(o *Options, pid int, timeout time.Duration) string {
	var b strings.Builder
	answered := false
	for _, cmd := range []string{"sysrq p", "sysrq t"} {
		out, err := mconsoleCommand(o.v2Mconsole(), cmd, timeout)
		fmt.Fprintf(&b, "$ mconsole %s\n%s", cmd, out)
		if !strings.HasSuffix(out, "\n") && out != "" {
			b.WriteString("\n")
		}
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
			continue
		}
		answered = true
	}
	if answered {
		return b.String()
	}
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		b.WriteString("(no gdb on this machine to read the kernel's stack from the host)\n")
		return b.String()
	}
	syms, err := readKallsyms(o.v2Share("state", "kallsyms"))
	if err != nil {
		fmt.Fprintf(&b, "(the kernel's symbols: %v; addresses left unnamed)\n", err)
	}
	for i := range 3 {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, gdb, "-p", strconv.Itoa(pid), "-batch", "-nx",
			"-ex", "info registers rip", "-ex", "bt 40").CombinedOutput()
		cancel()
		fmt.Fprintf(&b, "$ gdb -p %d -batch -ex 'info registers rip' -ex 'bt 40' (sample %d)\n", pid, i+1)
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "rip") {
				b.WriteString(syms.name(line) + "\n")
			}
		}
		if err != nil {
			fmt.Fprintf(&b, "(gdb: %v)\n", err)
		}
	}
	return b.String()
}

// kallsyms are a kernel's text symbols, sorted by address.
type kallsyms []ksym

type ksym struct {
	addr uint64
	name string
}

// readKallsyms reads /proc/kallsyms lines ("ffffffff81000000 T _stext").
func readKallsyms(path string) (kallsyms, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k kallsyms
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		k = append(k, ksym{a, f[2]})
	}
	if len(k) == 0 {
		return nil, fmt.Errorf("%s has no symbols with addresses", path)
	}
	slices.SortFunc(k, func(x, y ksym) int { return cmp.Compare(x.addr, y.addr) })
	return k, nil
}

// hexAddr is an address as gdb prints it.
var hexAddr = regexp.MustCompile(`0x[0-9a-f]{6,16}`)

// name appends to each address in line the symbol it falls in, as
// "0x6003f2a1 <tcp_sendmsg+0x21>".
func (k kallsyms) name(line string) string {
	if len(k) == 0 {
		return line
	}
	return hexAddr.ReplaceAllStringFunc(line, func(h string) string {
		a, err := strconv.ParseUint(h[2:], 16, 64)
		if err != nil {
			return h
		}
		i, found := slices.BinarySearchFunc(k, a, func(s ksym, a uint64) int { return cmp.Compare(s.addr, a) })
		if !found {
			i--
		}
		if i < 0 {
			return h
		}
		return fmt.Sprintf("%s <%s+0x%x>", h, k[i].name, a-k[i].addr)
	})
}
