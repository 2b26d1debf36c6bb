//go:build !unix

package cgroup

import (
	"errors"
	"io"
	"os"
)

// sysFile is an open cgroup file. Cgroups exist only on Linux. This
// portable version lets the package build, and its tests run on fixture
// trees, everywhere.
type sysFile struct{ f *os.File }

func openFile(path string) (sysFile, error) {
	f, err := os.Open(path)
	return sysFile{f}, err
}

func (f sysFile) readAt0(buf []byte) (int, error) {
	n, err := f.f.ReadAt(buf, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (f sysFile) close() error { return f.f.Close() }
