//go:build unix

package cgroup

import (
	"io/fs"
	"syscall"
)

// sysFile is an open cgroup file. On unix it is a bare descriptor. os.File
// would also register every cgroupfs file (they are pollable) with the
// runtime's epoll and make it nonblocking: four extra syscalls per open
// and close, which double the cost of a sample.
type sysFile int

func openFile(path string) (sysFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return sysFile(fd), nil
	}
}

// readAt0 reads from offset 0 with one pread. For cgroupfs (kernfs
// seq_file) a read at offset 0 regenerates the file, so a kept-open file
// shows fresh values on every call.
func (f sysFile) readAt0(buf []byte) (int, error) {
	for {
		n, err := syscall.Pread(int(f), buf, 0)
		if err == syscall.EINTR {
			continue
		}
		return n, err
	}
}

func (f sysFile) close() error { return syscall.Close(int(f)) }
