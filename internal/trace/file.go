package trace

import (
	"fmt"
	"io"
	"os"
)

// WriteFile creates path and renders into it (WriteSVG, WriteCSV, ...). A
// render or close error is returned wrapped with the path; the file may
// then be incomplete.
func WriteFile(path string, render func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := render(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
