package cachesim

// Run is one replay's figures.
type Run struct {
	Policy         string  `json:"policy"`
	ReadAhead      bool    `json:"readahead"`
	HitRate        float64 `json:"hit_rate"`
	MissesPerToken float64 `json:"misses_per_token"`
	Counts         Counts  `json:"counts"`
}

// Report is every replay of one trace at one arena size: the store's rule,
// plain LRU and MIN, with
// and without the recorded read-ahead, beside the live store's counters.
type Report struct {
	Slots     int   `json:"slots"`
	LiveSlots int   `json:"live_slots"`
	Tokens    int64 `json:"tokens"`
	ReadAhead bool  `json:"live_readahead"`
	Live      Run   `json:"live"`
	// LiveMatches is whether the Store replay at the live arena size and
	// read-ahead setting gave the live counters exactly.
	LiveMatches bool  `json:"live_matches"`
	Runs        []Run `json:"runs"`
}

func (t *Trace) run(p string, ra bool, c Counts) Run {
	r := Run{Policy: p, ReadAhead: ra, HitRate: c.HitRate(), Counts: c}
	if t.Tokens > 0 {
		r.MissesPerToken = float64(c.Misses) / float64(t.Tokens)
	}
	return r
}

// Replays replays t under Store, LRU and MIN, with and without read-ahead (with
// only when the live store read ahead), at slots (0: the live size).
func Replays(t *Trace, slots int) (*Report, error) {
	if slots == 0 {
		slots = t.Slots
	}
	rep := &Report{Slots: slots, LiveSlots: t.Slots, Tokens: t.Tokens, ReadAhead: t.ReadAhead, Live: t.run("live", t.ReadAhead, t.Live)}
	live, err := Replay(t, Store, Options{})
	if err != nil {
		return nil, err
	}
	rep.LiveMatches = live == t.Live
	for _, p := range []Policy{Store, LRU, MIN} {
		for _, ra := range []bool{true, false} {
			if ra && !t.ReadAhead {
				continue
			}
			c, err := Replay(t, p, Options{Slots: slots, NoReadAhead: !ra})
			if err != nil {
				return nil, err
			}
			rep.Runs = append(rep.Runs, t.run(p.String(), ra, c))
		}
	}
	return rep, nil
}
