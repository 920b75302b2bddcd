package engine

import "fmt"

// qwen35moeArch is Qwen3.5-MoE (llama.cpp qwen35moe): a hybrid of gated
// delta net blocks and gated full-attention blocks (every
// full_attention_interval-th layer, or as attention.recurrent_layers says),
// post_attention_norm before a MoE FFN with a sigmoid-gated shared expert.
// Attention rotates the first rope.dimension_count dims of each head with
// interleaved multi-section RoPE; delta-net value head h reads key head
// h % group_count (the converter tiles the value heads); beta and alpha
// are separate projections.
//
// A Qwen3.5 GGUF may end with nextn_predict_layers MTP (multi-token
// prediction) blocks beyond the trunk; the engine never runs them, so
// Layers counts the trunk only and their tensors are not loaded.
var qwen35moeArch = archSpec{
	config: func(md meta, c *Config) error { return hybridConfig(md, c, true) },
	layer:  func(l tensorLoader, c *Config, i int, L *Layer) error { return hybridLayer(l, c, i, L, false) },
}

// qwen3nextArch is Qwen3-Next (llama.cpp qwen3next): the qwen35moe graph
// with plain (single-section) partial NEOX RoPE, value heads grouped per
// key head (value head h reads key head h / (time_step_rank/group_count)),
// and beta/alpha fused as ssm_ba (per key head: its value heads' beta
// logits, then their alpha logits). Older conversions fuse q, k, v and z
// too, as ssm_in (per key head: q, k, its value heads' v, their z).
var qwen3nextArch = archSpec{
	config: func(md meta, c *Config) error { return hybridConfig(md, c, false) },
	layer:  func(l tensorLoader, c *Config, i int, L *Layer) error { return hybridLayer(l, c, i, L, true) },
}

func hybridConfig(md meta, c *Config, qwen35 bool) error {
	path := md.f.Path
	sections := qwen35
	c.NormTopK = true
	all := c.Layers // blocks in the file, MTP blocks included
	if qwen35 {
		mtp, err := md.nonNegative("nextn_predict_layers")
		if err != nil {
			return err
		}
		if mtp >= all {
			return fmt.Errorf("%s: metadata key %s = %d leaves no trunk layer of %d blocks", path, md.key("nextn_predict_layers"), mtp, all)
		}
		c.Layers = all - mtp
		c.MTPLayers = mtp
	}
	if err := md.countOpt("expert_shared_feed_forward_length", &c.SharedFF); err != nil {
		return err
	}
	if c.SharedFF == 0 {
		return fmt.Errorf("%s: missing metadata key %s", path, md.key("expert_shared_feed_forward_length"))
	}
	s := &c.SSM
	for _, k := range []struct {
		s string
		d *int
	}{
		{"ssm.conv_kernel", &s.ConvKernel}, {"ssm.state_size", &s.KeyDim},
		{"ssm.group_count", &s.KeyHeads}, {"ssm.time_step_rank", &s.ValueHeads},
	} {
		if err := md.count(k.s, k.d); err != nil {
			return err
		}
	}
	inner := 0
	if err := md.count("ssm.inner_size", &inner); err != nil {
		return err
	}
	if inner%s.ValueHeads != 0 || s.ValueHeads%s.KeyHeads != 0 {
		return fmt.Errorf("%s: ssm.inner_size %d, time_step_rank %d, group_count %d: want value heads a multiple of key heads and an inner size a multiple of value heads", path, inner, s.ValueHeads, s.KeyHeads)
	}
	s.ValueDim = inner / s.ValueHeads
	s.GroupedHeads = !sections

	// Which layers are recurrent: attention.recurrent_layers, else every
	// layer but each full_attention_interval-th (default 4).
	c.Recurrent = make([]bool, c.Layers)
	if rec, ok, err := md.ints("attention.recurrent_layers", all); err != nil {
		return err
	} else if ok {
		for i := range c.Recurrent {
			c.Recurrent[i] = rec[i] != 0
		}
	} else {
		interval := 4
		if err := md.countOpt("full_attention_interval", &interval); err != nil {
			return err
		}
		for i := range c.Recurrent {
			c.Recurrent[i] = (i+1)%interval != 0
		}
	}

	// head_count_kv: a scalar, or per layer (0 on recurrent layers).
	kv, ok, err := md.ints("attention.head_count_kv", all)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: missing metadata key %s", path, md.key("attention.head_count_kv"))
	}
	for i, n := range kv[:c.Layers] {
		if c.Recurrent[i] {
			continue
		}
		if n == 0 || (c.HeadsKV != 0 && n != c.HeadsKV) {
			return fmt.Errorf("%s: metadata key %s: attention layer %d has %d KV heads; want the same positive count on every attention layer", path, md.key("attention.head_count_kv"), i, n)
		}
		c.HeadsKV = n
	}
	if c.HeadsKV == 0 {
		c.HeadsKV = max(kv[0], 1) // no attention layer at all
	}
	if c.ValueDim != c.HeadDim {
		return fmt.Errorf("%s: key_length %d != value_length %d (the gated attention needs equal head dims)", path, c.HeadDim, c.ValueDim)
	}
	if err := md.countOpt("rope.dimension_count", &c.RopeDims); err != nil {
		return err
	}
	if !sections {
		return nil
	}
	sec, ok, err := md.ints("rope.dimension_sections", 4)
	if err != nil {
		return err
	}
	if ok {
		sum := 0
		for _, v := range sec {
			sum += v
		}
		if sum == 0 || sum > c.HeadDim/2 {
			return fmt.Errorf("%s: metadata key %s = %v: want sections summing to 1..%d pairs", path, md.key("rope.dimension_sections"), sec, c.HeadDim/2)
		}
		c.RopeSections = sec
	}
	return nil
}

func hybridLayer(l tensorLoader, c *Config, i int, L *Layer, fusedBA bool) error {
	p := fmt.Sprintf("blk.%d.", i)
	mixer := func() error { return loadAttention(l, c, p, L, true) }
	if c.Recurrent[i] {
		mixer = func() error { return loadDeltaNet(l, c, p, L, fusedBA) }
	}
	return loadSteps(
		func() (e error) { L.AttnNorm, e = l.vector(p+"attn_norm.weight", c.Embd); return },
		func() (e error) { L.FFNNorm, e = l.vector(p+"post_attention_norm.weight", c.Embd); return },
		mixer,
		func() error { return loadRouter(l, c, i, L) },
		func() (e error) { L.Shared, e = loadShared(l, c, p); return },
	)
}

func loadDeltaNet(l tensorLoader, c *Config, p string, L *Layer, fusedBA bool) error {
	s := &c.SSM
	d := &DeltaNet{}
	vdim := s.ValueHeads * s.ValueDim
	steps := []func() error{
		func() (e error) { d.QKV, e = l.matrix(p+"attn_qkv.weight", c.Embd, s.Channels()); return },
		func() (e error) { d.Z, e = l.matrix(p+"attn_gate.weight", c.Embd, vdim); return },
	}
	if _, ok := l.f.Tensor(p + "attn_qkv.weight"); !ok && fusedBA {
		// qwen3next's legacy layout: q, k, v and z from one ssm_in.
		steps = []func() error{func() error {
			in, err := l.matrix(p+"ssm_in.weight", c.Embd, s.Channels()+vdim)
			d.In = &in
			return err
		}}
	}
	steps = append(steps,
		func() (e error) { d.Conv, e = l.floats(p+"ssm_conv1d.weight", s.ConvKernel, s.Channels()); return },
		func() (e error) { d.DtBias, e = l.vector(p+"ssm_dt.bias", s.ValueHeads); return },
		func() (e error) { d.A, e = l.vector(p+"ssm_a", s.ValueHeads); return },
		func() (e error) { d.Norm, e = l.vector(p+"ssm_norm.weight", s.ValueDim); return },
		func() (e error) { d.Out, e = l.matrix(p+"ssm_out.weight", vdim, c.Embd); return },
	)
	if fusedBA {
		steps = append(steps, func() error {
			ba, err := l.matrix(p+"ssm_ba.weight", c.Embd, 2*s.ValueHeads)
			d.BA = &ba
			return err
		})
	} else {
		steps = append(steps,
			func() (e error) { d.Beta, e = l.matrix(p+"ssm_beta.weight", c.Embd, s.ValueHeads); return },
			func() (e error) { d.Alpha, e = l.matrix(p+"ssm_alpha.weight", c.Embd, s.ValueHeads); return },
		)
	}
	if err := loadSteps(steps...); err != nil {
		return err
	}
	L.Delta = d
	return nil
}

func loadShared(l tensorLoader, c *Config, p string) (*SharedExpert, error) {
	sh := &SharedExpert{}
	err := loadSteps(
		func() (e error) { sh.GateInp, e = l.vector(p+"ffn_gate_inp_shexp.weight", c.Embd); return },
		func() (e error) { sh.Gate, e = l.matrix(p+"ffn_gate_shexp.weight", c.Embd, c.SharedFF); return },
		func() (e error) { sh.Up, e = l.matrix(p+"ffn_up_shexp.weight", c.Embd, c.SharedFF); return },
		func() (e error) { sh.Down, e = l.matrix(p+"ffn_down_shexp.weight", c.SharedFF, c.Embd); return },
	)
	if err != nil {
		return nil, err
	}
	return sh, nil
}
