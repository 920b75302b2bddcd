//go:build amd64 && !noasm

package kernels

// The IQ3_XXS and IQ2_XXS tile decoders in AVX-512 (qdot_iqxxs512_amd64.s):
// the grid entries gathered, the signs applied under masks, multipliers 1;
// the factors by the AVX2 pass (iqFactorsIQ3XXS, iqFactorsIQ2XXS), so a
// group decodes to decodeGroupsPortable's weights, multipliers and scales.

//go:noescape
func q8decodeIQ3XXSAVX512(w *byte, blocks int, grid *uint32, out *int8, m *int16)

//go:noescape
func q8decodeIQ2XXSAVX512(w *byte, blocks int, grid *uint64, out *int8, m *int16)

func q8decodeIQ3XXSVector512(row []byte, g0, ng int, d *q8Decoded, at int) {
	iqFactorsIQ3XXS(&row[98*g0], ng, &d.dw[8*at])
	q8decodeIQ3XXSAVX512(&row[98*g0], ng, &iq3xxsGrid[0], &d.w[256*at], &d.m[8*at])
}

func q8decodeIQ2XXSVector512(row []byte, g0, ng int, d *q8Decoded, at int) {
	iqFactorsIQ2XXS(&row[66*g0], ng, &d.dw[8*at])
	q8decodeIQ2XXSAVX512(&row[66*g0], ng, &iq2xxsGrid[0], &d.w[256*at], &d.m[8*at])
}
