package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// GoBuild is one long `go build` of the lab (Kubernetes, VPA, helm) that
// reports its progress: what is built, the time gone, and packages built
// of the packages the build needs, so a cold build of ten minutes is not
// one silent line.
type GoBuild struct {
	// What names the build in progress lines ("Kubernetes v1.35.4").
	What string
	// Dir is the build module; Env the go command's environment.
	Dir string
	Env []string
	// Args are go build's arguments after "build" (flags, then packages).
	Args []string
	// Packages are the packages built, for counting their dependencies.
	Packages []string
	// Log receives the go command's own output; Progress the progress lines.
	Log, Progress io.Writer
	// Every is the time between progress lines; zero means 15 s.
	Every time.Duration
}

// Run runs the build. The total is what `go list -deps` counts; packages
// already in the build cache are not built again, so a warm build ends
// early, and the count says so.
func (b GoBuild) Run(ctx context.Context) error {
	every := b.Every
	if every == 0 {
		every = 15 * time.Second
	}
	total := b.countDeps(ctx)
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-v"}, b.Args...)...)
	cmd.Dir, cmd.Env = b.Dir, b.Env
	pr, pw := io.Pipe()
	// Both through the pipe: one writer to Log, never two at once.
	cmd.Stdout, cmd.Stderr = pw, pw
	counter := &buildCounter{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		counter.consume(pr, b.Log)
	}()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		<-copied
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			pw.Close()
			<-copied
			if err != nil {
				fmt.Fprintf(b.Progress, "  %s: failed after %s (%d packages built)\n", b.What, time.Since(start).Round(time.Second), counter.count())
				return err
			}
			fmt.Fprintf(b.Progress, "  %s: %s\n", b.What, progressLine(counter.count(), total, time.Since(start), true))
			return nil
		case <-tick.C:
			fmt.Fprintf(b.Progress, "  %s: %s\n", b.What, progressLine(counter.count(), total, time.Since(start), false))
		}
	}
}

// countDeps counts the packages the build needs (0 when go list fails: the
// build itself will say why).
func (b GoBuild) countDeps(ctx context.Context) int {
	if len(b.Packages) == 0 {
		return 0
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-deps"}, b.Packages...)...)
	cmd.Dir, cmd.Env = b.Dir, b.Env
	cmd.Stderr = b.Log
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	return bytes.Count(out, []byte("\n"))
}

// progressLine formats packages built of total after elapsed, with an
// estimate of the time left once a tenth is done.
func progressLine(built, total int, elapsed time.Duration, finished bool) string {
	el := elapsed.Round(time.Second)
	switch {
	case finished:
		return fmt.Sprintf("done in %s (%d packages built, the rest from the build cache)", el, built)
	case total <= 0:
		return fmt.Sprintf("%d packages built, %s", built, el)
	}
	if built > total {
		built = total
	}
	line := fmt.Sprintf("%d/%d packages, %s", built, total, el)
	if built*10 >= total && built < total {
		left := time.Duration(float64(elapsed) * float64(total-built) / float64(built)).Round(10 * time.Second)
		line += fmt.Sprintf(", about %s left", left)
	}
	return line
}

// buildCounter counts the package lines of `go build -v` (one import path
// per line; compiler messages contain spaces or colons).
type buildCounter struct {
	mu sync.Mutex
	n  int
}

func (c *buildCounter) consume(r io.Reader, log io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if isPackageLine(line) {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (c *buildCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func isPackageLine(line string) bool {
	return line != "" && !strings.ContainsAny(line, " \t:") && !strings.HasPrefix(line, "#")
}

// BuildEnv is the go command's environment for the lab's throwaway build
// modules: their go.mod is written on the fly, and no go.work applies.
func BuildEnv() []string { return append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off") }
