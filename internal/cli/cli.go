// Package cli holds what every stratactl command shares: output streams,
// --json and -v, progress bars that appear only on a terminal, and the error
// that carries an exit status.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Version is the tool version, set at link time with
// -ldflags "-X github.com/stratactl/stratactl/internal/cli.Version=...".
var Version = "0.1.0-dev"

// Env is what a command needs from its surroundings; tests build one with
// buffers (Test).
type Env struct {
	Stdin   io.Reader
	Out     io.Writer
	Err     io.Writer
	JSON    bool // --json: one JSON document on Out, nothing else there
	Verbose bool // -v
	// Terminal reports whether Err is a terminal; progress bars appear only then.
	Terminal bool
	// Args is the full command line, recorded in manifests.
	Args []string
}

// Default is the process's real streams.
func Default() *Env {
	return &Env{
		Stdin:    os.Stdin,
		Out:      os.Stdout,
		Err:      os.Stderr,
		Terminal: term.IsTerminal(int(os.Stderr.Fd())),
		Args:     os.Args,
	}
}

// Test is an Env over buffers, never a terminal.
func Test(out, errw io.Writer) *Env {
	return &Env{Stdin: eofReader{}, Out: out, Err: errw, Args: []string{"stratactl"}}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Logf prints a line on Err when -v is set.
func (e *Env) Logf(format string, args ...any) {
	if e.Verbose {
		fmt.Fprintf(e.Err, format+"\n", args...)
	}
}

// PrintJSON writes v as one indented JSON document on Out.
func (e *Env) PrintJSON(v any) error {
	enc := json.NewEncoder(e.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Progress is a byte or item counter shown as a bar on a terminal and not at
// all otherwise (piped output, --json, tests).
type Progress struct {
	bar *progressbar.ProgressBar
}

// NewProgress starts a bar for total units; bytes selects byte formatting
// (with rate and ETA).
func (e *Env) NewProgress(total int64, desc string, bytes bool) *Progress {
	if !e.Terminal || e.JSON {
		return &Progress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(e.Err),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowIts())
	}
	return &Progress{bar: progressbar.NewOptions64(total, opts...)}
}

// Add advances the bar; safe on a nil or hidden bar.
func (p *Progress) Add(n int64) {
	if p != nil && p.bar != nil {
		p.bar.Add64(n)
	}
}

// Done clears the bar.
func (p *Progress) Done() {
	if p != nil && p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
}

// ExitError carries an exit status other than 1 (or 1 with no message, when
// the command already printed its report).
type ExitError struct {
	Code   int
	Err    error
	Silent bool // the command has printed its own report
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Failed returns an error that exits with status 1 without printing again:
// the command has already reported what failed (verify, for example).
func Failed() error { return &ExitError{Code: 1, Silent: true} }

// ExitCode maps an error to the process exit status.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

// SignalContext is cancelled on SIGINT, SIGTERM or SIGHUP (a closed
// terminal), so long work stops promptly and removes its partial output.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
