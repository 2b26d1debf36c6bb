package lab

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeMconsole answers each request on a Unix datagram socket with the
// replies reply returns for its command, as UML's mconsole does: a header
// (err, more, len) and up to 511 bytes of text with a NUL.
func fakeMconsole(t *testing.T, reply func(cmd string) (code uint32, chunks []string)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "mconsole")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 12+mconsoleMaxData)
		for {
			n, from, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			if n < 12 || binary.NativeEndian.Uint32(buf) != mconsoleMagic || binary.NativeEndian.Uint32(buf[4:]) != mconsoleVersion {
				continue // not answered: the client times out
			}
			size := binary.NativeEndian.Uint32(buf[8:])
			code, chunks := reply(string(buf[12 : 12+size]))
			for i, c := range chunks {
				out := make([]byte, 12+len(c)+1)
				binary.NativeEndian.PutUint32(out, code)
				if i < len(chunks)-1 {
					binary.NativeEndian.PutUint32(out[4:], 1)
				}
				binary.NativeEndian.PutUint32(out[8:], uint32(len(c)+1))
				copy(out[12:], c)
				conn.WriteToUnix(out, from)
			}
		}
	}()
	return sock
}

func TestMconsoleCommand(t *testing.T) {
	sock := fakeMconsole(t, func(cmd string) (uint32, []string) {
		switch cmd {
		case "sysrq t":
			return 0, []string{"task:systemd state:S\n", "task:kubelet state:R\n"}
		case "version":
			return 0, []string{"OK Linux 6.1"}
		case "silent":
			return 0, nil
		}
		return 1, []string{"unknown command"}
	})
	got, err := mconsoleCommand(sock, "sysrq t", time.Second)
	if err != nil || got != "task:systemd state:S\ntask:kubelet state:R\n" {
		t.Errorf("sysrq t: %q, %v; want both replies joined", got, err)
	}
	if got, err := mconsoleCommand(sock, "version", time.Second); err != nil || got != "OK Linux 6.1" {
		t.Errorf("version: %q, %v", got, err)
	}
	if _, err := mconsoleCommand(sock, "frobnicate", time.Second); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("an error reply: %v, want its text as the error", err)
	}
	if _, err := mconsoleCommand(sock, "silent", 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no reply") {
		t.Errorf("no reply: %v, want a timeout error", err)
	}
	if _, err := mconsoleCommand(filepath.Join(t.TempDir(), "none"), "version", time.Second); err == nil {
		t.Error("a missing socket: no error")
	}
	if _, err := mconsoleCommand(sock, strings.Repeat("x", mconsoleMaxData), time.Second); err == nil {
		t.Error("a command too long: no error")
	}
}

func TestKallsymsName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(path, []byte("0000000060001000 T _stext\n0000000060002000 t spin_here\n0000000060003000 T later\n0000000000000000 T hidden\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := readKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"#0  0x0000000060002010 in ?? ()":               "#0  0x0000000060002010 <spin_here+0x10> in ?? ()",
		"rip            0x60003000          0x60003000": "rip            0x60003000 <later+0x0>          0x60003000 <later+0x0>",
		"#1  0x0000000050000000 in ?? ()":               "#1  0x0000000050000000 in ?? ()",
	} {
		if got := k.name(in); got != want {
			t.Errorf("name(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := readKallsyms(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("no file: no error")
	}
}
