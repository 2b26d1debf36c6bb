package labcli

import (
	"fmt"
	"io"
	"os"
	"time"
)

// requestTimeout bounds each request to the API server. Watches end with
// it too; the code that watches starts them again.
const requestTimeout = 30 * time.Second

// writeFile creates path and renders into it.
func writeFile(path string, render func(io.Writer) error) error {
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
