package engine

// bpeEncoder holds the scratch state of one Encode call: the per-word cache
// (source text repeats its words a lot, so most words are merged once) and
// the buffers of the merge loop.
type bpeEncoder struct {
	t     *Tokenizer
	cache map[string][]int32
	ids   []int32 // current symbol of each initial byte position; -1 once merged away
	next  []int32 // linked list over the live symbols
	prev  []int32
	heap  []mergeCandidate
	word  []byte // llama3 whole-word lookup, in byte-to-unicode form
}

// Words longer than this are merged but not cached: they are rare (long
// runs of one class) and would make the cache's memory depend on the input.
const maxCachedWord = 64

// encodeText pre-tokenizes a piece of text without special tokens and
// appends the BPE ids of every word.
func (e *bpeEncoder) encodeText(out []int32, s string) []int32 {
	for i := 0; i < len(s); {
		end := e.t.pre.nextWord(s, i)
		out = e.encodeWord(out, s[i:end])
		i = end
	}
	return out
}

func (e *bpeEncoder) encodeWord(out []int32, w string) []int32 {
	if len(w) == 1 {
		return append(out, e.t.byteToken[w[0]])
	}
	cacheable := len(w) <= maxCachedWord
	if cacheable {
		if ids, ok := e.cache[w]; ok {
			return append(out, ids...)
		}
	}
	start := len(out)
	out = e.merge(out, w)
	if cacheable {
		if e.cache == nil {
			e.cache = make(map[string][]int32)
		}
		e.cache[w] = append([]int32(nil), out[start:]...)
	}
	return out
}

// mergeCandidate is a pair of adjacent symbols that a merge rule joins.
// left and right record the ids the pair had when it was queued, so a
// candidate made stale by an earlier merge is recognised and dropped.
type mergeCandidate struct {
	rank, pos   int32
	left, right int32
}

// before orders candidates by rank, then leftmost first: the order in
// which GPT-2's BPE (and HF tokenizers) apply merges.
func (a mergeCandidate) before(b mergeCandidate) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// merge runs BPE on one word: start from one symbol per byte and apply the
// lowest-ranked applicable merge until none applies. Symbols form a linked
// list over the byte positions (a merged symbol lives at the position of its
// first byte), and candidate pairs sit in a binary heap, so a word of n
// bytes costs O(n log n).
func (e *bpeEncoder) merge(out []int32, w string) []int32 {
	t := e.t
	if t.ignoreMerges {
		// llama3-style vocabularies take a word that is itself a token as is.
		e.word = e.word[:0]
		for i := 0; i < len(w); i++ {
			e.word = append(e.word, string(byteRune[w[i]])...)
		}
		if id, ok := t.textToID[string(e.word)]; ok {
			return append(out, id)
		}
	}
	n := len(w)
	e.ids = bpeGrow(e.ids, n)
	e.next = bpeGrow(e.next, n)
	e.prev = bpeGrow(e.prev, n)
	for i := 0; i < n; i++ {
		e.ids[i] = t.byteToken[w[i]]
		e.prev[i] = int32(i - 1)
		e.next[i] = int32(i + 1)
	}
	e.next[n-1] = -1
	e.heap = e.heap[:0]
	for i := 0; i+1 < n; i++ {
		e.push(int32(i), int32(i+1))
	}
	for len(e.heap) > 0 {
		c := e.pop()
		l := c.pos
		r := e.next[l]
		if e.ids[l] != c.left || r < 0 || e.ids[r] != c.right {
			continue
		}
		m := t.merges[uint64(uint32(c.left))<<32|uint64(uint32(c.right))]
		e.ids[l] = int32(uint32(m))
		e.ids[r] = -1
		rr := e.next[r]
		e.next[l] = rr
		if rr >= 0 {
			e.prev[rr] = l
		}
		if p := e.prev[l]; p >= 0 {
			e.push(p, l)
		}
		if rr >= 0 {
			e.push(l, rr)
		}
	}
	for i := int32(0); i >= 0; i = e.next[i] {
		out = append(out, e.ids[i])
	}
	return out
}

// push queues the pair (l, r) if a merge rule joins their current symbols.
func (e *bpeEncoder) push(l, r int32) {
	left, right := e.ids[l], e.ids[r]
	m, ok := e.t.merges[uint64(uint32(left))<<32|uint64(uint32(right))]
	if !ok {
		return
	}
	c := mergeCandidate{rank: int32(m >> 32), pos: l, left: left, right: right}
	h := append(e.heap, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].before(h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	e.heap = h
}

func (e *bpeEncoder) pop() mergeCandidate {
	h := e.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		least := i
		if l := 2*i + 1; l < len(h) && h[l].before(h[least]) {
			least = l
		}
		if r := 2*i + 2; r < len(h) && h[r].before(h[least]) {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	e.heap = h
	return top
}

func bpeGrow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
