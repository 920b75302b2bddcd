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

// Progress is a counter shown as a bar on a terminal and not at all
// otherwise (piped output, --json, tests).
type Progress struct {
	bar *progressbar.ProgressBar
}

// Unit is what a progress bar counts. Every bar has the same shape
// (description, bar, done/total, rate, time left); the unit only changes how
// the counts are written.
type Unit string

// The units of stratactl's bars.
const (
	Bytes   Unit = "bytes" // written as kB, MB, GB
	Tokens  Unit = "tokens"
	Steps   Unit = "steps"
	Weights Unit = "weights"
)

// NewProgress starts a bar for total units.
func (e *Env) NewProgress(total int64, desc string, unit Unit) *Progress {
	if !e.Terminal || e.JSON {
		return &Progress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(e.Err),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	}
	if unit == Bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionSetItsString(string(unit)))
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

// ExitInterrupted is the exit status of a command stopped by SIGINT or
// SIGTERM: 128 + SIGINT, as a shell reports a process killed by Ctrl-C.
const ExitInterrupted = 130

// Interrupted turns the error of a command that ran under ctx into the
// interrupt error when ctx was cancelled: the command stopped because it was
// told to, whatever error the cancellation surfaced as. A nil err (the work
// finished before it noticed) stays nil.
func Interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted")}
}

// SignalContext is cancelled on SIGINT, SIGTERM or SIGHUP (a closed
// terminal), so long work stops promptly and removes its partial output.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
