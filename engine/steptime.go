package engine

import (
	"time"

	"github.com/stratactl/stratactl/kernels"
)

// Phase is a part of a decode step that StepTimes times: the weight
// products (which stream the weights) apart from the work between them.
type Phase int

const (
	PhaseEmbed      Phase = iota // the token's embedding row
	PhaseNorm                    // RMS norms, residual adds, non-finite checks
	PhaseQuant                   // activations quantized (or rounded) for the products
	PhaseQKV                     // the q, k and v products (a delta net's input products)
	PhaseRoPE                    // k norms and rotation (a batch's q too; a decode token's q in PhaseAttn)
	PhaseAttn                    // scores and sums over the KV cache, a decode token's q norm and rotation (a delta net's recurrence)
	PhaseO                       // the mixer's output product
	PhaseRouter                  // the router product
	PhaseRoute                   // softmax, top-k, the experts' bookkeeping
	PhaseReadAhead               // read-ahead's guesses (per layer up to three norms and the Q8_0 router copy's row products)
	PhaseWait                    // waiting for experts' reads, and pinning them
	PhaseExpertUp                // the routed and shared experts' gate and up products, SwiGLU
	PhaseExpertDown              // their down products
	PhaseCombine                 // the experts' outputs weighted and summed
	PhaseHead                    // the output head's product
	PhaseSample                  // the sampler (Generate's, after the step)
	NumPhases
)

var phaseNames = [NumPhases]string{"embed", "norm", "quantize", "qkv", "rope", "attention", "o", "router", "route", "read-ahead", "expert wait",
	"experts gate/up", "experts down", "combine", "head", "sample"}

func (p Phase) String() string { return phaseNames[p] }

// Products reports whether the phase is weight products (its time is
// mostly the kernels streaming weights).
func (p Phase) Products() bool {
	switch p {
	case PhaseQKV, PhaseO, PhaseRouter, PhaseReadAhead, PhaseExpertUp, PhaseExpertDown, PhaseHead:
		return true
	}
	return false
}

// StepTimes accumulates where decode steps spend their time, phase by
// phase: set Session.Timing and every Step (and Generate's sampling)
// adds to it, or Group.Timing (WindowsOptions.Timing) and every Forward
// of a batch of windows does. Each phase's time runs from the end of the one before to its
// own end on one monotonic clock, so the phases of a step add up to the
// step's whole time; Bytes are the weight bytes the phase's products read.
// Timing costs two clock reads per phase, a few microseconds a step.
type StepTimes struct {
	Steps int
	Nanos [NumPhases]int64
	Bytes [NumPhases]int64
	// Passes are the pool's parallel passes (round trips to its workers)
	// in the phase and WaitNanos the caller's time in them waiting for
	// the workers' last claims (kernels.PoolCounters).
	Passes    [NumPhases]int64
	WaitNanos [NumPhases]int64
	pool      *kernels.Pool
	last      time.Time
	lastPool  kernels.PoolCounters
	on        bool
}

func (st *StepTimes) begin(pool *kernels.Pool) {
	st.pool, st.lastPool = pool, pool.Counters()
	st.last, st.on = time.Now(), true
}

func (st *StepTimes) end() { st.on = false; st.Steps++ }

// lap ends phase p now: the time since the last lap is p's.
func (st *StepTimes) lap(p Phase) {
	now := time.Now()
	st.Nanos[p] += int64(now.Sub(st.last))
	st.last = now
	c := st.pool.Counters()
	st.Passes[p] += c.Passes - st.lastPool.Passes
	st.WaitNanos[p] += c.WaitNanos - st.lastPool.WaitNanos
	st.lastPool = c
}

// add counts d in phase p (a phase outside Step: the sampler's).
func (st *StepTimes) add(p Phase, d time.Duration) { st.Nanos[p] += int64(d) }

// lap ends phase p of a timed step (nothing outside one).
func (s *Session) lap(p Phase) {
	if st := s.Timing; st != nil && st.on {
		st.lap(p)
	}
}

// lapProducts ends product phase p, whose products read the weights ms.
func (s *Session) lapProducts(p Phase, ms ...*kernels.Matrix) {
	if st := s.Timing; st != nil && st.on {
		st.lap(p)
		for _, m := range ms {
			st.Bytes[p] += int64(len(m.Data))
		}
	}
}

// lapReadAhead ends the read-ahead run before layer next's mixer
// (Session.readAhead): the Q8_0 router copy of each layer it guesses.
func (s *Session) lapReadAhead(next int) {
	st := s.Timing
	if st == nil || !st.on {
		return
	}
	st.lap(PhaseReadAhead)
	m := s.m
	for l := next; l < min(next+m.Experts.ReadAhead(), len(m.Layers)); l++ {
		if q := m.Layers[l].RouterQ8; q != nil {
			st.Bytes[PhaseReadAhead] += int64(len(q.Data))
		}
	}
}
