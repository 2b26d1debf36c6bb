package chart

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Files is the chart itself, so that a binary (snug-lab's demo and
// benches) installs the chart of the tree it was built from.
//
//go:embed Chart.yaml values.yaml values.schema.json .helmignore all:templates all:files all:dashboards
var Files embed.FS

// WriteTo writes the chart into dir (created), for helm to install from.
func WriteTo(dir string) error {
	return fs.WalkDir(Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, path)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := Files.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return fmt.Errorf("writing the chart: %w", err)
		}
		return nil
	})
}
