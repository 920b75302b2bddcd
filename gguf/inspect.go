package gguf

import "errors"

// InspectReport is stratactl inspect's --json document; docs/INSPECT.md
// describes every field, and the names are part of the interface.
type InspectReport struct {
	File          string            `json:"file"`
	FileBytes     int64             `json:"file_bytes"`
	Version       uint32            `json:"version"`
	Architecture  string            `json:"architecture"`
	Name          string            `json:"name"`
	Alignment     int64             `json:"alignment"`
	DataOffset    int64             `json:"data_offset"`
	TensorCount   int               `json:"tensor_count"`
	TensorBytes   int64             `json:"tensor_bytes"`
	MetadataCount int               `json:"metadata_count"`
	Metadata      map[string]any    `json:"metadata"`
	MetadataTypes map[string]string `json:"metadata_types"`
	Tensors       []InspectTensor   `json:"tensors"`
	MoE           *InspectMoE       `json:"moe"`
	MoEError      string            `json:"moe_error,omitempty"`
	Shards        []InspectShard    `json:"shards,omitempty"`
}

// InspectShard is one file of a split model.
type InspectShard struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	Tensors int    `json:"tensors"`
}

type InspectTensor struct {
	Name   string  `json:"name"`
	Type   string  `json:"type"`
	Shape  []int64 `json:"shape"`
	Bytes  int64   `json:"bytes"`
	Offset int64   `json:"offset"`
	Shard  int     `json:"shard"` // index into shards for a split model, else 0
	Expert bool    `json:"expert"`
}

type InspectMoE struct {
	Layers         int      `json:"layers"`
	Blocks         int      `json:"blocks"`
	Experts        int      `json:"experts"`
	ExpertsUsed    int      `json:"experts_used"`
	ExpertFF       int64    `json:"expert_ff"`
	Embedding      int64    `json:"embedding"`
	ExpertTypes    []string `json:"expert_types"`
	BytesPerExpert int64    `json:"bytes_per_expert"`
	ExpertBytes    int64    `json:"expert_bytes"`
	DenseBytes     int64    `json:"dense_bytes"`
	ExpertShare    float64  `json:"expert_share"`
	// FusedGateUp: the experts' gate and up come fused (ffn_gate_up_exps).
	FusedGateUp bool `json:"fused_gate_up,omitempty"`
	// MTPBlocks are the multi-token-prediction blocks (not in Layers), and
	// MTPBytes all their tensors.
	MTPBlocks []int             `json:"mtp_blocks,omitempty"`
	MTPBytes  int64             `json:"mtp_bytes,omitempty"`
	PerLayer  []InspectMoELayer `json:"per_layer"`
}

type InspectMoELayer struct {
	Block          int               `json:"block"`
	Types          map[string]string `json:"types"` // "ffn_down_exps.weight" -> "IQ4_NL"
	BytesPerExpert int64             `json:"bytes_per_expert"`
	ExpertBytes    int64             `json:"expert_bytes"`
}

// Inspect describes f for stratactl inspect (its --json document): the
// header, every key and tensor, and the MoE layout. The header alone is
// read, never tensor data.
func Inspect(f *File) *InspectReport {
	rep := &InspectReport{
		File:          f.Path,
		FileBytes:     f.Size,
		Version:       f.Version,
		Architecture:  f.Architecture(),
		Alignment:     f.Alignment,
		DataOffset:    f.DataOffset,
		TensorCount:   len(f.Tensors),
		MetadataCount: len(f.KV),
		Metadata:      make(map[string]any, len(f.KV)),
		MetadataTypes: make(map[string]string, len(f.KV)),
		Tensors:       make([]InspectTensor, len(f.Tensors)),
	}
	rep.Name, _ = f.String("general.name")
	for _, kv := range f.KV {
		rep.Metadata[kv.Key] = kv.Value.JSON()
		rep.MetadataTypes[kv.Key] = kv.Value.TypeName()
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rep.TensorBytes += t.Size
		_, off := f.Locate(t)
		rep.Tensors[i] = InspectTensor{Name: t.Name, Type: t.Type.String(), Shape: t.Dims, Bytes: t.Size, Offset: off, Shard: t.Shard, Expert: IsExpertTensor(t.Name)}
	}
	for _, sh := range f.Shards {
		rep.Shards = append(rep.Shards, InspectShard{Path: sh.Path, Bytes: sh.Size, Tensors: sh.Tensors})
	}
	m, err := f.MoE()
	switch {
	case errors.Is(err, ErrNoMoE):
	case err != nil:
		rep.MoEError = err.Error()
	default:
		im := &InspectMoE{
			Layers: len(m.Layers), Blocks: m.Blocks, Experts: m.Experts, ExpertsUsed: m.ExpertsUsed,
			ExpertFF: m.ExpertFF, Embedding: m.Embd, BytesPerExpert: m.BytesPerExpert,
			ExpertBytes: m.ExpertBytes, DenseBytes: m.DenseBytes,
			ExpertShare: float64(m.ExpertBytes) / float64(f.Size),
			FusedGateUp: m.Layers[0].GateUp != nil, MTPBlocks: m.MTP, MTPBytes: m.MTPBytes,
		}
		for _, ty := range m.ExpertTypes {
			im.ExpertTypes = append(im.ExpertTypes, ty.String())
		}
		for _, l := range m.Layers {
			types := map[string]string{}
			for _, t := range l.ExpertTensors() {
				_, part, _ := SplitBlockName(t.Name)
				types[part] = t.Type.String()
			}
			im.PerLayer = append(im.PerLayer, InspectMoELayer{Block: l.Block, Types: types, BytesPerExpert: l.BytesPerExpert, ExpertBytes: l.ExpertTensorSize})
		}
		rep.MoE = im
	}
	return rep
}
