package engine

import (
	"errors"
	"fmt"
	"syscall"
)

// The store's native AIO path (PackStore.aio): a piece is submitted as
// soon as it is queued and a request is free, by whichever goroutine
// queued it (a Need or Guess on the forward pass, or the reaper as a
// request ends), so reads start while every core computes; with reader
// goroutines, a queued read waited for a reader to be scheduled, about a
// millisecond on two busy cores (docs/BENCHMARKS.md). The queues' order
// (demands first, then the newest guesses) decides which pieces take the
// free requests, as it decides what the readers take.

// Tests: aioSubmitFault, when set, submits in place of aioCtx.submit (and
// may refuse requests); aioResultFault rewrites each completion's result.
var (
	aioSubmitFault func(a *aioCtx) ([]int, error)
	aioResultFault func(res int64) int64
)

// pump submits queued pieces while requests are free. Called with s.mu
// held.
func (s *PackStore) pump() {
	n := 0
	for s.aioBusy < s.aioDepth {
		i := s.nextQueued()
		if i < 0 {
			break
		}
		q := s.takePiece(i)
		r := i*s.pieces + q.piece
		q.live = true
		s.reqs[r] = q
		buf, off := s.pieceAt(i, q)
		s.aio.prep(r, s.aioFd, buf, off)
		s.aioBusy++
		n++
	}
	if n == 0 {
		return
	}
	submit := (*aioCtx).submit
	if aioSubmitFault != nil {
		submit = aioSubmitFault
	}
	unsent, err := submit(s.aio)
	for _, r := range unsent {
		// Read it the readers' way, on a goroutine of its own; the kernel
		// does not have it (aioBroken must not end it).
		s.reqs[r].live = false
		q := s.reqs[r]
		go func() {
			buf, off := s.pieceAt(r/s.pieces, q)
			s.aioLanded(r, q, s.readAt(buf, off), err)
		}()
	}
}

// aioReap takes the completions of the store's requests until the store
// has closed and nothing is in flight or queued.
func (s *PackStore) aioReap() {
	defer s.wg.Done()
	for {
		evs, err := s.aio.wait()
		if err != nil {
			s.aioBroken(err)
			return
		}
		for _, ev := range evs {
			r := int(ev.data)
			s.mu.Lock()
			q := s.reqs[r]
			s.mu.Unlock()
			if q.piece == 0 && s.readHook != nil {
				s.readHook(q.key) // tests: holds the reaper in this read
			}
			buf, off := s.pieceAt(r/s.pieces, q)
			if aioResultFault != nil {
				ev.res = aioResultFault(ev.res)
			}
			var rerr error
			switch {
			case ev.res < 0:
				rerr = syscall.Errno(-ev.res)
			case ev.res != int64(len(buf)):
				rerr = fmt.Errorf("a direct read of %d bytes read %d", len(buf), ev.res)
			}
			if rerr != nil {
				// Again the readers' way (readAt falls back to buffered
				// reads for good if the filesystem refused a direct one).
				rerr = s.readAt(buf, off)
			}
			s.aioLanded(r, q, rerr, nil)
		}
		s.mu.Lock()
		// (Once the readers have taken over, what is queued is theirs.)
		done := s.closed && s.aioBusy == 0 && (!s.aioOn() || s.nextQueued() < 0)
		s.mu.Unlock()
		if done {
			return
		}
	}
}

// aioBroken fails every request in flight when the context can no longer
// wait for completions (not seen: io_getevents fails only on a bad
// context or buffer), so that their Gets return the error rather than
// wait forever, and hands the queue to the readers.
func (s *PackStore) aioBroken(err error) {
	err = fmt.Errorf("native AIO: %w", err)
	// io_destroy waits for the requests the kernel still has, so none
	// writes the arena once it is ended here.
	derr := s.aio.destroy()
	s.mu.Lock()
	s.aioDead = true
	if derr != nil {
		err = errors.Join(err, derr)
	}
	var live []int
	for r := range s.reqs {
		if s.reqs[r].live {
			live = append(live, r)
		}
	}
	s.mu.Unlock()
	for _, r := range live {
		s.mu.Lock()
		q, still := s.reqs[r], s.reqs[r].live
		s.mu.Unlock()
		if still {
			s.aioLanded(r, q, err, err)
		}
	}
	s.mu.Lock()
	s.aioDepth = 0
	s.startReaders()
	s.work.Broadcast()
	s.mu.Unlock()
}

// aioLanded ends request r (piece q), read with err; why is why native
// AIO could not take it, if it could not.
func (s *PackStore) aioLanded(r int, q pieceReq, err, why error) {
	s.pieceRead(r/s.pieces, q, err)
	s.aioBusy--
	s.reqs[r].live = false
	s.ioMu.Lock()
	direct := s.direct
	s.ioMu.Unlock()
	if !direct || why != nil {
		// The file is read buffered now, or AIO failed: the readers take
		// over (a buffered read in io_submit would block the forward
		// pass).
		if why != nil {
			s.ioMu.Lock()
			if s.directNote == "" {
				s.directNote = "native AIO refused (" + why.Error() + "); reader goroutines"
			}
			s.ioMu.Unlock()
		}
		s.aioDepth = 0
		s.startReaders()
		s.work.Broadcast()
	}
	s.pump()
	if s.closed && s.aioBusy == 0 && !s.aioDead {
		// The reaper may be parked with nothing left to wake it: this
		// request was read outside AIO (a refused submit).
		s.aio.poke()
	}
	s.mu.Unlock()
}

// aioWake wakes the reaper so that it sees the store closed.
func (s *PackStore) aioWake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.aioDead {
		s.aio.poke()
	}
}
