//go:build !linux || !(amd64 || arm64)

package engine

import "errors"

// Native AIO is used on little-endian 64-bit Linux only; elsewhere the
// store's reader goroutines read every slot.
type aioCtx struct{}

type aioEvent struct {
	data, obj uint64
	res, res2 int64
}

const aioAvailable = false

var errNoAIO = errors.New("native AIO: not on this platform")

func newAIO(depth, reqs int) (*aioCtx, error)                   { return nil, errNoAIO }
func (a *aioCtx) prep(r int, fd uintptr, buf []byte, off int64) {}
func (a *aioCtx) submit() ([]int, error)                        { return nil, errNoAIO }
func (a *aioCtx) wait() ([]aioEvent, error)                     { return nil, errNoAIO }
func (a *aioCtx) poke()                                         {}
func (a *aioCtx) destroy() error                                { return nil }
