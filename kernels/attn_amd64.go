//go:build amd64 && !noasm

package kernels

// attn_amd64.s; n >= 1, blocks >= 1 (attn.go checks the shapes).

//go:noescape
func attnScoresAVX512(q *float32, k *float32, stride int, n int, chunks int, scale float32, out *float32)

//go:noescape
func attnSumAVX512(o *float32, p *float32, v *float32, stride int, n int, blocks int)
