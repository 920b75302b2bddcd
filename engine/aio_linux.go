//go:build linux && (amd64 || arm64)

package engine

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// aioCtx is a Linux native AIO context (io_setup): the store submits its
// O_DIRECT slot reads through it from whichever goroutine queues them
// (one io_submit, no goroutine to wake), so a read starts at once even
// when every core is busy with the forward pass. Each completion also
// counts on an eventfd that Go's poller watches, so the goroutine that
// takes the completions waits parked, holding no thread or P: blocked in
// io_getevents, it kept its P until the runtime took it back, and the
// forward pass's goroutines waited for one (two-thread decode 15% slower).
// Reads of a file opened without O_DIRECT would run inside io_submit, so
// the store uses it only for direct reads.
type aioCtx struct {
	id     uintptr
	efd    *os.File   // the eventfd the completions count on
	iocbs  []aioIocb  // one per request slot, reused once submitted
	ptrs   []*aioIocb // io_submit's argument
	events []aioEvent // io_getevents' buffer (the reaping goroutine's)
	cnt    [8]byte    // the eventfd's count, read by wait
}

// aioIocb is struct iocb (linux/aio_abi.h) on a little-endian machine.
type aioIocb struct {
	data      uint64
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqPrio   int16
	fd        uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// aioEvent is struct io_event.
type aioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	aioCmdPread  = 0
	aioFlagResfd = 1 // IOCB_FLAG_RESFD: signal aio_resfd on completion
)

// aioAvailable reports whether this build can use native AIO (little-endian
// Linux, where aioIocb's field order is the kernel's).
const aioAvailable = true

// newAIO sets up a context for depth requests in flight and reqs request
// slots (user data 0..reqs-1).
func newAIO(depth, reqs int) (*aioCtx, error) {
	if unsafe.Sizeof(aioIocb{}) != 64 || unsafe.Sizeof(aioEvent{}) != 32 {
		return nil, errors.New("native AIO: unexpected struct layout")
	}
	a := &aioCtx{iocbs: make([]aioIocb, reqs), ptrs: make([]*aioIocb, 0, depth), events: make([]aioEvent, depth)}
	fd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		return nil, fmt.Errorf("eventfd: %w", e)
	}
	// A non-blocking descriptor: os.NewFile puts it in the poller.
	a.efd = os.NewFile(fd, "aio-eventfd")
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&a.id)), 0); e != 0 {
		a.efd.Close()
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	return a, nil
}

// prep fills request slot r's iocb: a read of len(buf) bytes at off of fd
// into buf (memory that stays put until the read completes: the arena,
// outside the Go heap), and queues it for the next submit.
func (a *aioCtx) prep(r int, fd uintptr, buf []byte, off int64) {
	cb := &a.iocbs[r]
	*cb = aioIocb{data: uint64(r), opcode: aioCmdPread, fd: uint32(fd), buf: uint64(uintptr(unsafe.Pointer(&buf[0]))), nbytes: uint64(len(buf)), offset: off,
		flags: aioFlagResfd, resfd: uint32(a.efd.Fd())}
	a.ptrs = append(a.ptrs, cb)
}

// submit submits the prepared requests; it returns the request slots it
// could not submit (each then needs another way) and why.
func (a *aioCtx) submit() ([]int, error) {
	ptrs := a.ptrs
	a.ptrs = a.ptrs[:0]
	for len(ptrs) > 0 {
		n, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, a.id, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
		if e == syscall.EINTR {
			continue
		}
		var err error
		if e != 0 {
			err = fmt.Errorf("io_submit: %w", e)
		} else if n == 0 {
			err = errors.New("io_submit took no request")
		}
		if err != nil {
			unsent := make([]int, len(ptrs))
			for k, cb := range ptrs {
				unsent[k] = int(cb.data)
			}
			return unsent, err
		}
		ptrs = ptrs[n:]
	}
	return nil, nil
}

// wait parks until a request has completed or poke was called, and
// returns the completions (none after a poke alone).
func (a *aioCtx) wait() ([]aioEvent, error) {
	if _, err := a.efd.Read(a.cnt[:]); err != nil {
		return nil, fmt.Errorf("aio eventfd: %w", err)
	}
	var ts syscall.Timespec // zero: take what has completed, never block
	for {
		n, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, a.id, 0, uintptr(len(a.events)), uintptr(unsafe.Pointer(&a.events[0])), uintptr(unsafe.Pointer(&ts)), 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return nil, fmt.Errorf("io_getevents: %w", e)
		}
		return a.events[:n], nil
	}
}

// poke wakes wait.
func (a *aioCtx) poke() {
	one := [8]byte{1}
	a.efd.Write(one[:]) // cannot fail short of 2^64-1 pokes
}

// destroy releases the context (no request may be in flight).
func (a *aioCtx) destroy() error {
	err := a.efd.Close()
	if _, _, e := syscall.Syscall(syscall.SYS_IO_DESTROY, a.id, 0, 0); e != 0 {
		err = errors.Join(err, fmt.Errorf("io_destroy: %w", e))
	}
	return err
}
