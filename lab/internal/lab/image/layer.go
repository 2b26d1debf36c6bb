package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// layerTar returns files as an uncompressed layer tar: relative paths,
// directories with a trailing slash, every missing parent directory added,
// parents before children, owned by root, every entry modified at mtime.
// go-containerregistry has no builder for a layer from a file list that
// keeps modes and symlinks (crane.Layer writes 0644 files only), hence
// this one.
func layerTar(files []File, mtime time.Time) ([]byte, error) {
	byPath := map[string]File{}
	explicit := map[string]bool{}
	for _, f := range files {
		p, err := cleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if explicit[p] {
			return nil, fmt.Errorf("duplicate path %s", f.Path)
		}
		explicit[p] = true
		f.Path = p
		byPath[p] = f
	}
	for p := range explicit {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if f, ok := byPath[dir]; ok {
				if explicit[dir] && !f.Mode.IsDir() {
					return nil, fmt.Errorf("path /%s is under /%s, which is not a directory", p, dir)
				}
				continue
			}
			byPath[dir] = File{Path: dir, Mode: os.ModeDir | 0o755}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	// A path sorts before every path it is a prefix of, so parents come first.
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		hdr := &tar.Header{Name: p, Mode: tarMode(f.Mode), ModTime: mtime}
		switch {
		case f.Link != "":
			if len(f.Data) > 0 || f.Mode.IsDir() {
				return nil, fmt.Errorf("symlink /%s must have neither data nor a directory mode", p)
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
		case f.Mode.IsDir():
			if len(f.Data) > 0 {
				return nil, fmt.Errorf("directory /%s must not have data", p)
			}
			hdr.Typeflag, hdr.Name = tar.TypeDir, p+"/"
		case f.Mode&os.ModeType != 0:
			return nil, fmt.Errorf("path /%s has unsupported file type %v", p, f.Mode.Type())
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing /%s: %w", p, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("writing /%s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// cleanPath turns an absolute image path into the relative form layer tars
// use, refusing paths that are not absolute, not clean or the root itself.
func cleanPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		return "", fmt.Errorf("path %q must be absolute, clean and not the root", p)
	}
	return p[1:], nil
}

// tarMode converts an os.FileMode to tar's Unix mode bits.
func tarMode(m os.FileMode) int64 {
	mode := int64(m.Perm())
	if m&os.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
