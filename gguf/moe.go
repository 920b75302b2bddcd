package gguf

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stratactl/stratactl/quant"
)

// ErrNoMoE is returned (wrapped, with the file name) by File.MoE for a model
// that has no per-expert tensors: a dense model is not a malformed file, so
// callers that accept both test for it with errors.Is.
var ErrNoMoE = errors.New("no mixture-of-experts tensors (blk.N.*_exps.*)")

// MoELayer is the mixture of experts of one block. Gate, Up and Down are the
// stacked expert matrices (ggml ne = [n_embd, n_ff_exp, n_expert] for gate
// and up, [n_ff_exp, n_embd, n_expert] for down); Router is ffn_gate_inp
// (ne = [n_embd, n_expert]). Gate is nil for architectures whose experts
// have no gate (plain up/down FFN). GateUp is the fused layout
// (ffn_gate_up_exps, ne = [n_embd, 2 n_ff_exp, n_expert], which
// convert_hf_to_gguf.py --fuse-gate-up-exps writes): each expert's slice
// holds its gate rows, then its up rows (llama.cpp's build_moe_ffn takes the
// first n_ff_exp outputs as gate); Gate and Up are nil then.
type MoELayer struct {
	Block            int
	Gate, Up, Down   *TensorInfo
	GateUp           *TensorInfo
	Router           *TensorInfo
	Extra            []*TensorInfo // other per-expert tensors of the block (biases, scales): blk.N.*_exps.*
	Experts          int           // n_expert of this layer
	ExpertFF, Embd   int64
	BytesPerExpert   int64 // one expert's slices of every per-expert tensor of the block
	ExpertTensorSize int64 // all per-expert tensors of the block together
}

// LayerBlocks lists the block number of each MoE layer, in order: the
// layer list of a keep map and of a pack's experts file.
func (m *MoE) LayerBlocks() []uint32 {
	out := make([]uint32, len(m.Layers))
	for i, l := range m.Layers {
		out[i] = uint32(l.Block)
	}
	return out
}

// ExpertTensors lists every per-expert tensor of the layer: gate (if any),
// up (or the fused gate_up), down, then the extras in file order.
func (l *MoELayer) ExpertTensors() []*TensorInfo {
	out := make([]*TensorInfo, 0, 3+len(l.Extra))
	if l.Gate != nil {
		out = append(out, l.Gate)
	}
	if l.GateUp != nil {
		out = append(out, l.GateUp)
	} else {
		out = append(out, l.Up)
	}
	out = append(out, l.Down)
	return append(out, l.Extra...)
}

// ExpertPart is one of the three matrices of an expert (gate, up, down) as
// the source stores it: the expert's slice of a stacked tensor, or one half
// of its slice of the fused ffn_gate_up_exps.
type ExpertPart struct {
	Tensor *TensorInfo
	Ne0    int64 // weights per row
	Rows   int64 // rows of one expert's matrix
	Half   int   // 0: the whole slice; 1: its first half (gate); 2: its second half (up)
}

// Parts returns the layer's gate, up and down; ok is false when the experts
// have no gate.
func (l *MoELayer) Parts() (parts [3]ExpertPart, ok bool) {
	down := ExpertPart{Tensor: l.Down, Ne0: l.ExpertFF, Rows: l.Embd}
	switch {
	case l.GateUp != nil:
		return [3]ExpertPart{{l.GateUp, l.Embd, l.ExpertFF, 1}, {l.GateUp, l.Embd, l.ExpertFF, 2}, down}, true
	case l.Gate != nil:
		return [3]ExpertPart{{l.Gate, l.Embd, l.ExpertFF, 0}, {l.Up, l.Embd, l.ExpertFF, 0}, down}, true
	}
	return parts, false
}

// Slice is the byte range of expert e's part inside the tensor's data,
// relative to the tensor's start.
func (p ExpertPart) Slice(e int) (off, size int64, err error) {
	off, size, err = ExpertSlice(p.Tensor, e)
	if err != nil || p.Half == 0 {
		return off, size, err
	}
	if size%2 != 0 {
		return 0, 0, fmt.Errorf("tensor %q: an expert's %d bytes do not split into gate and up halves", p.Tensor.Name, size)
	}
	size /= 2
	return off + int64(p.Half-1)*size, size, nil
}

// FirstElement is the index, within the tensor, of the first weight of
// expert e's part.
func (p ExpertPart) FirstElement(e int) int64 {
	n := p.Ne0 * p.Rows
	if p.Half == 0 {
		return int64(e) * n
	}
	return int64(e)*2*n + int64(p.Half-1)*n
}

// RowOffset is the first row of the part within one expert's matrix of
// the tensor: 0, or n_ff_exp for the up half of the fused gate_up.
func (p ExpertPart) RowOffset() int64 {
	if p.Half == 0 {
		return 0
	}
	return int64(p.Half-1) * p.Rows
}

// Label names the part in reports: the tensor's name after "blk.N.", with
// the half for the fused tensor.
func (p ExpertPart) Label() string {
	_, rest, _ := SplitBlockName(p.Tensor.Name)
	switch p.Half {
	case 1:
		return rest + "[gate]"
	case 2:
		return rest + "[up]"
	}
	return rest
}

// MoE describes the mixture-of-experts structure of a model.
type MoE struct {
	Arch        string
	Layers      []MoELayer // MoE blocks in block order; dense blocks are absent
	Blocks      int        // {arch}.block_count, or 1 + the largest block index seen
	Experts     int        // experts per layer (equal in every MoE layer)
	ExpertsUsed int        // {arch}.expert_used_count; 0 when the key is absent
	ExpertFF    int64      // n_ff_exp (equal in every MoE layer)
	Embd        int64      // n_embd
	// ExpertTypes are the distinct types of the per-expert tensors, in
	// ascending type id order.
	ExpertTypes []quant.Type
	// BytesPerExpert is the size of one expert of one layer (its slices of
	// every per-expert tensor). When layers use different types it is the
	// largest; MoELayer.BytesPerExpert has each layer's figure.
	BytesPerExpert int64
	ExpertBytes    int64 // all per-expert tensors of the file
	DenseBytes     int64 // every other tensor (attention, norms, routers, embeddings, shared experts)
	// MTP lists the multi-token-prediction blocks (File.MTPBlocks), which
	// inference never runs. They are not in Layers, and their tensors count
	// in MTPBytes, not in ExpertBytes or DenseBytes.
	MTP      []int
	MTPBytes int64
}

// NextNKey is the key (after "{arch}.") that counts the
// multi-token-prediction blocks, the last blocks of {arch}.block_count
// (Qwen3.5, GLM-4.5 and DeepSeek GGUFs; llama.cpp's nextn_predict_layers).
const NextNKey = "nextn_predict_layers"

// MTPBlocks returns the model's multi-token-prediction blocks, first ..
// first+n-1: the last {arch}.nextn_predict_layers of its
// {arch}.block_count blocks. n is 0 when the key is absent or 0.
func (f *File) MTPBlocks() (first, n int, err error) {
	key := f.ArchKey(NextNKey)
	nn, has, err := optionalCount(f, key)
	if err != nil || !has || nn == 0 {
		return 0, 0, err
	}
	blockKey := f.ArchKey("block_count")
	bc, hasBC, err := optionalCount(f, blockKey)
	if err != nil {
		return 0, 0, err
	}
	if !hasBC || nn >= bc {
		return 0, 0, &FormatError{File: f.Path, Offset: f.KeyOffset(key), Key: key,
			Msg: fmt.Sprintf("%d multi-token-prediction blocks, but %s = %d leaves no other block", nn, blockKey, bc)}
	}
	return int(bc - nn), int(nn), nil
}

// InMTP reports whether the tensor name belongs to one of m's MTP blocks.
func (m *MoE) InMTP(name string) bool {
	b, _, ok := SplitBlockName(name)
	return ok && len(m.MTP) > 0 && b >= m.MTP[0]
}

// UniformExpertBytes reports whether every layer's expert has the same size.
func (m *MoE) UniformExpertBytes() bool {
	for i := range m.Layers {
		if m.Layers[i].BytesPerExpert != m.BytesPerExpert {
			return false
		}
	}
	return true
}

// SplitBlockName splits "blk.N.rest" into N and rest; ok is false for names
// outside a block (token_embd.weight) or with a malformed block number.
func SplitBlockName(name string) (block int, rest string, ok bool) {
	s, found := strings.CutPrefix(name, "blk.")
	if !found {
		return 0, "", false
	}
	num, rest, found := strings.Cut(s, ".")
	if !found || num == "" || rest == "" || (len(num) > 1 && num[0] == '0') {
		return 0, "", false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, "", false
	}
	return n, rest, true
}

// IsExpertTensor reports whether name is a per-expert tensor: blk.N.X.*
// where X ends in "_exps" (ffn_gate_exps.weight, ffn_down_exps.bias, ...).
// Such a tensor's last dimension is n_expert and expert e's data is the e-th
// of n_expert equal contiguous slices. Shared experts (*_shexp) are dense.
func IsExpertTensor(name string) bool {
	_, rest, ok := SplitBlockName(name)
	if !ok {
		return false
	}
	base, _, _ := strings.Cut(rest, ".")
	return isExpsBase(base)
}

func isExpsBase(base string) bool {
	return strings.HasSuffix(base, "_exps") && len(base) > len("_exps")
}

// expertIndexedBases are the block tensors other than the expert tensors
// whose last dimension is the expert: the router (one row per expert, and
// its bias) and DeepSeek-style expert score biases.
var expertIndexedBases = []string{"ffn_gate_inp", "exp_probs_b"}

// ExpertIndexed is the per-expert rule: whether a tensor of a MoE block
// (rest: its name after "blk.N.") holds one slice per expert along its last
// dimension. Those are the expert tensors (IsExpertTensor: *_exps.*, the
// only ones MoE counts as expert data), the router ffn_gate_inp.* and the
// expert score biases exp_probs_b.*, matched by the name's first component.
// Shared experts (*_shexp, ffn_gate_inp_shexp) are dense. Pruning cuts every
// such tensor of a MoE layer to the kept experts; strata.ExpertIndexed adds
// the pack's router copy.
func ExpertIndexed(rest string) bool {
	base, _, _ := strings.Cut(rest, ".")
	return isExpsBase(base) || slices.Contains(expertIndexedBases, base)
}

// ExpertMatrices are the names (after "blk.N.") of a MoE layer's stacked
// expert matrices: gate, up, down.
var ExpertMatrices = [3]string{"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}

// FusedGateUp is the name (after "blk.N.") of the fused gate and up matrix.
const FusedGateUp = "ffn_gate_up_exps.weight"

// RouterName is the name of block b's router (ffn_gate_inp, ne = [n_embd,
// n_expert]: row e scores expert e).
func RouterName(block int) string { return fmt.Sprintf("blk.%d.ffn_gate_inp.weight", block) }

// ExpertSlice is the byte range of expert e inside per-expert tensor t's
// data: [off, off+size) relative to the tensor's start. It relies on the
// last dimension being the expert index, which File.MoE checks.
func ExpertSlice(t *TensorInfo, e int) (off, size int64, err error) {
	if len(t.Dims) < 2 {
		return 0, 0, fmt.Errorf("tensor %q (ne %v) has no expert dimension", t.Name, t.Dims)
	}
	n := t.Dims[len(t.Dims)-1]
	if n <= 0 || t.Size%n != 0 {
		return 0, 0, fmt.Errorf("tensor %q (ne %v, %d bytes) is not split evenly into experts", t.Name, t.Dims, t.Size)
	}
	if e < 0 || int64(e) >= n {
		return 0, 0, fmt.Errorf("tensor %q: expert %d out of range [0, %d)", t.Name, e, n)
	}
	size = t.Size / n
	return int64(e) * size, size, nil
}

// MoE finds and checks the model's mixture-of-experts tensors. A dense model
// gives an error wrapping ErrNoMoE; inconsistent shapes give a *FormatError
// naming the tensor and its info record's byte offset.
func (f *File) MoE() (*MoE, error) {
	m := &MoE{Arch: f.Architecture()}
	bad := func(t *TensorInfo, format string, args ...any) error {
		return &FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf(format, args...)}
	}
	badKey := func(key, format string, args ...any) error {
		return &FormatError{File: f.Path, Offset: f.KeyOffset(key), Key: key, Msg: fmt.Sprintf(format, args...)}
	}

	mtpFirst, mtpN, err := f.MTPBlocks()
	if err != nil {
		return nil, err
	}
	for b := mtpFirst; b < mtpFirst+mtpN; b++ {
		m.MTP = append(m.MTP, b)
	}
	byBlock := map[int]*MoELayer{}
	maxBlock := -1
	for i := range f.Tensors {
		t := &f.Tensors[i]
		b, rest, ok := SplitBlockName(t.Name)
		if !ok {
			continue
		}
		maxBlock = max(maxBlock, b)
		if !IsExpertTensor(t.Name) || m.InMTP(t.Name) {
			continue
		}
		l := byBlock[b]
		if l == nil {
			l = &MoELayer{Block: b}
			byBlock[b] = l
		}
		switch rest {
		case ExpertMatrices[0]:
			l.Gate = t
		case ExpertMatrices[1]:
			l.Up = t
		case ExpertMatrices[2]:
			l.Down = t
		case FusedGateUp:
			l.GateUp = t
		default:
			l.Extra = append(l.Extra, t)
		}
	}

	countKey := f.ArchKey("expert_count")
	declared, hasCount, err := optionalCount(f, countKey)
	if err != nil {
		return nil, err
	}
	if len(byBlock) == 0 {
		if hasCount && declared > 0 {
			return nil, badKey(countKey, "declares %d experts but the file has no blk.N.*_exps.* tensors (per-expert tensors stored separately are not supported)", declared)
		}
		return nil, fmt.Errorf("%s: %w", f.Path, ErrNoMoE)
	}

	blocks := make([]int, 0, len(byBlock))
	for b := range byBlock {
		blocks = append(blocks, b)
	}
	sort.Ints(blocks)

	embdKey, ffKey := f.ArchKey("embedding_length"), f.ArchKey("expert_feed_forward_length")
	embd, hasEmbd, err := optionalCount(f, embdKey)
	if err != nil {
		return nil, err
	}
	ffDeclared, hasFF, err := optionalCount(f, ffKey)
	if err != nil {
		return nil, err
	}

	types := map[quant.Type]bool{}
	for k, b := range blocks {
		l := byBlock[b]
		if l.GateUp != nil && (l.Gate != nil || l.Up != nil) {
			return nil, bad(l.GateUp, "block %d has both the fused %s and separate gate/up matrices", b, FusedGateUp)
		}
		if (l.Up == nil && l.GateUp == nil) || l.Down == nil {
			some := l.presentTensors()[0]
			missing := ExpertMatrices[1]
			if l.Up != nil || l.GateUp != nil {
				missing = ExpertMatrices[2]
			}
			return nil, bad(some, "block %d has per-expert tensors but no blk.%d.%s", b, b, missing)
		}
		// The shape comes from up, or from the fused gate_up (2 n_ff_exp rows).
		up, fused := l.Up, int64(1)
		if up == nil {
			up, fused = l.GateUp, 2
		}
		if len(up.Dims) != 3 {
			return nil, bad(up, "ne %v: want 3 dimensions [n_embd, %sn_ff_exp, n_expert]", up.Dims, map[int64]string{1: "", 2: "2 x "}[fused])
		}
		if up.Dims[1]%fused != 0 {
			return nil, bad(up, "ne %v: the fused gate and up need an even row count (2 x n_ff_exp)", up.Dims)
		}
		l.Embd, l.ExpertFF, l.Experts = up.Dims[0], up.Dims[1]/fused, int(up.Dims[2])
		if up.Dims[2] > 1<<20 {
			return nil, bad(up, "ne %v: %d experts is implausible", up.Dims, up.Dims[2])
		}
		if k == 0 {
			m.Embd, m.ExpertFF, m.Experts = l.Embd, l.ExpertFF, l.Experts
			if hasEmbd && embd != uint64(m.Embd) {
				return nil, bad(up, "ne[0] = %d but %s = %d", m.Embd, embdKey, embd)
			}
			if hasFF && ffDeclared != uint64(m.ExpertFF) {
				return nil, bad(up, "ne[1] = %d but %s = %d", m.ExpertFF, ffKey, ffDeclared)
			}
			if hasCount && declared != uint64(m.Experts) {
				return nil, bad(up, "ne[2] = %d experts but %s = %d", m.Experts, countKey, declared)
			}
		}
		want := []int64{m.Embd, m.ExpertFF, int64(m.Experts)}
		if l.Gate != nil && !slices.Equal(l.Gate.Dims, want) {
			return nil, bad(l.Gate, "ne %v, want [n_embd, n_ff_exp, n_expert] = %v", l.Gate.Dims, want)
		}
		if wantUp := []int64{m.Embd, fused * m.ExpertFF, int64(m.Experts)}; !slices.Equal(up.Dims, wantUp) {
			return nil, bad(up, "ne %v, want [n_embd, %sn_ff_exp, n_expert] = %v like block %d", up.Dims, map[int64]string{1: "", 2: "2 x "}[fused], wantUp, blocks[0])
		}
		if wantDown := []int64{m.ExpertFF, m.Embd, int64(m.Experts)}; !slices.Equal(l.Down.Dims, wantDown) {
			return nil, bad(l.Down, "ne %v, want [n_ff_exp, n_embd, n_expert] = %v", l.Down.Dims, wantDown)
		}
		for _, x := range l.Extra {
			if len(x.Dims) < 2 || x.Dims[len(x.Dims)-1] != int64(m.Experts) {
				return nil, bad(x, "ne %v: a per-expert tensor's last dimension must be n_expert = %d", x.Dims, m.Experts)
			}
		}
		router, ok := f.Tensor(RouterName(b))
		if !ok {
			return nil, bad(up, "block %d has experts but no router %s", b, RouterName(b))
		}
		if wantR := []int64{m.Embd, int64(m.Experts)}; !slices.Equal(router.Dims, wantR) {
			return nil, bad(router, "ne %v, want [n_embd, n_expert] = %v", router.Dims, wantR)
		}
		l.Router = router
		for _, t := range l.ExpertTensors() {
			_, size, err := ExpertSlice(t, 0)
			if err != nil {
				return nil, bad(t, "%v", err)
			}
			l.BytesPerExpert += size
			l.ExpertTensorSize += t.Size
			types[t.Type] = true
		}
		m.ExpertBytes += l.ExpertTensorSize
		m.BytesPerExpert = max(m.BytesPerExpert, l.BytesPerExpert)
		m.Layers = append(m.Layers, *l)
	}

	usedKey := f.ArchKey("expert_used_count")
	used, hasUsed, err := optionalCount(f, usedKey)
	if err != nil {
		return nil, err
	}
	if hasUsed {
		if used == 0 || used > uint64(m.Experts) {
			return nil, badKey(usedKey, "%d experts used per token, want 1..%d (the expert count)", used, m.Experts)
		}
		m.ExpertsUsed = int(used)
	}

	m.Blocks = maxBlock + 1
	blockKey := f.ArchKey("block_count")
	if n, ok, err := optionalCount(f, blockKey); err != nil {
		return nil, err
	} else if ok {
		if n < uint64(m.Blocks) {
			return nil, badKey(blockKey, "%d blocks, but tensors name block %d", n, maxBlock)
		}
		m.Blocks = int(n)
	}

	for i := range f.Tensors {
		switch t := &f.Tensors[i]; {
		case m.InMTP(t.Name):
			m.MTPBytes += t.Size
		case !IsExpertTensor(t.Name):
			m.DenseBytes += t.Size
		}
	}
	for t := range types {
		m.ExpertTypes = append(m.ExpertTypes, t)
	}
	sort.Slice(m.ExpertTypes, func(a, b int) bool { return m.ExpertTypes[a] < m.ExpertTypes[b] })
	return m, nil
}

// presentTensors is the layer's per-expert tensors that are set, for
// error reports on incomplete layers.
func (l *MoELayer) presentTensors() []*TensorInfo {
	var out []*TensorInfo
	for _, t := range []*TensorInfo{l.Gate, l.Up, l.GateUp, l.Down} {
		if t != nil {
			out = append(out, t)
		}
	}
	return append(out, l.Extra...)
}

// optionalCount reads a non-negative integer key that may be absent.
func optionalCount(f *File, key string) (uint64, bool, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false, nil
	}
	n, ok := v.AsUint64()
	if !ok {
		return 0, true, &FormatError{File: f.Path, Offset: f.KeyOffset(key), Key: key, Msg: fmt.Sprintf("holds %s, want a non-negative integer", describe(v))}
	}
	return n, true, nil
}
