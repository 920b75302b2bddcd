package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestProgressShape: every bar shows its description, the count against the
// total in its unit and a rate; none appears off a terminal or with --json.
func TestProgressShape(t *testing.T) {
	for _, c := range []struct {
		unit Unit
		want []string
	}{
		{Tokens, []string{"profile", "tokens/s", "/1000"}},
		{Steps, []string{"profile", "steps/s", "/1000"}},
		{Bytes, []string{"profile", "B/s", "kB"}},
	} {
		var errb bytes.Buffer
		e := &Env{Out: &bytes.Buffer{}, Err: &errb, Terminal: true}
		p := e.NewProgress(1000, "profile", c.unit)
		p.Add(500)
		p.bar.RenderBlank()
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%s bar %q lacks %q", c.unit, errb.String(), w)
			}
		}
		p.Done()
	}
	for _, e := range []*Env{{Err: &bytes.Buffer{}}, {Err: &bytes.Buffer{}, Terminal: true, JSON: true}} {
		p := e.NewProgress(10, "x", Tokens)
		p.Add(5)
		p.Done()
		if n := e.Err.(*bytes.Buffer).Len(); n != 0 {
			t.Errorf("terminal %v, json %v: the bar wrote %d bytes", e.Terminal, e.JSON, n)
		}
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	other := errors.New("disk full")
	if err := Interrupted(ctx, other); err != other {
		t.Errorf("not cancelled: %v, want the command's error", err)
	}
	cancel()
	if err := Interrupted(ctx, nil); err != nil {
		t.Errorf("finished before it noticed: %v, want nil", err)
	}
	err := Interrupted(ctx, other)
	if ExitCode(err) != ExitInterrupted || err.Error() != "interrupted" {
		t.Errorf("cancelled: exit %d %q, want %d \"interrupted\"", ExitCode(err), err, ExitInterrupted)
	}
}
