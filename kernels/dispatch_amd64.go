//go:build amd64 && !noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// chooseKernels binds each assembly kernel where c has every extension its
// instructions need (read off the disassembly: no kernel uses FMA3 or BMI2,
// the BF16 tile kernels' VFMADD231PS being AVX-512 F's;
// VCVTPH2PS is F16C; 256-bit integer instructions are AVX2; the rest is AVX;
// the 512-bit kernels need AVX-512 F, BW and VNNI besides).
func chooseKernels(c cpuFeatures) kernelSet {
	var k kernelSet
	// Plain Go, faster than quant's loop on a little-endian machine.
	k.dequant[quant.F32] = dequantF32LE
	fused := func(t quant.Type, unit int, f func([]byte, []float32) float32) {
		ti, _ := quant.Info(t)
		k.dot[t] = fusedDot{f: f, unit: unit, blockElems: ti.BlockElements, blockBytes: ti.BlockBytes}
	}
	if c.avx {
		k.dotF32 = dotF32AVX2
		k.dotF32x2 = dotF32x2AVX2
		k.axpy = axpyAVX2
		k.maxF32, k.findF32 = maxF32AVX, findF32AVX
		k.add, k.scaleMulVec = addAVX, scaleMulAVX
		k.shiftScaleVec, k.widenVec = shiftScaleAVX, widenAVX
		fused(quant.F32, 32, dotF32Vector)
		k.q2 = &quant.Q2SearchKernels{Score: q2ScoreVector, Pack: quant.Q2SearchRef.Pack}
		k.paths = "avx"
	}
	if c.f16c {
		fused(quant.F16, 32, dotF16Vector)
		k.dequant[quant.F16] = halfWidth(quant.F16, dequantF16AVX2)
		k.paths = "avx+f16c"
	}
	if c.avx2 {
		fused(quant.BF16, 32, dotBF16Vector)
		k.dequant[quant.BF16] = halfWidth(quant.BF16, dequantBF16AVX2)
		k.dequant[quant.MXFP4] = dequantMXFP4Vector
		k.dequant[quant.IQ4_XS] = dequantIQ4XSVector
		k.dequant[quant.Q2_K] = dequantQ2KVector
		k.dequant[quant.Q3_K] = dequantQ3KVector
		k.dequant[quant.Q4_K] = dequantQ4KVector
		k.dequant[quant.Q5_K] = dequantQ5KVector
		k.dequant[quant.Q6_K] = dequantQ6KVector
		k.q2.Pack = q2PackVector
		k.q8dotTile2 = q8dotTile2Vector
		k.q8dotTile2H = q8dotTile2HVector
		k.q8decodeHalves[quant.Q6_K] = q8decodeQ6KHalves
		k.bf16dot = bf16dotVector
		k.xorReadVec = xorReadAVX2
		k.swiglu = swigluAVX2
		k.exp = expAVX2
		k.paths = "avx2"
	}
	if c.avx2 && c.f16c {
		fused(quant.Q8_0, 32, dotQ8_0Vector)
		fused(quant.IQ4_NL, 32, dotIQ4NLVector)
		fused(quant.Q2_0, 64, dotQ2_0Vector)
		k.dequant[quant.Q8_0] = dequantQ8_0Vector
		k.dequant[quant.Q4_0] = dequantQ4_0Vector
		k.dequant[quant.IQ4_NL] = dequantIQ4NLVector
		k.dequant[quant.Q2_0] = dequantQ2_0Vector
		k.dequant[quant.IQ3_S] = dequantIQ3SVector
		k.q8dot[quant.Q8_0] = q8dotQ8_0Vector
		k.q8dot[quant.IQ4_NL] = q8dotIQ4NLVector
		k.q8dot[quant.Q4_0] = q8dotQ4_0Vector
		k.q8dot[quant.Q2_0] = q8dotQ2_0Vector
		k.q8dot[quant.IQ3_S] = q8dotIQ3SVector
		k.q8dot[quant.Q2_K] = q8dotQ2KVector
		k.q8dot[quant.Q3_K] = q8dotQ3KVector
		k.q8dot[quant.Q4_K] = q8dotQ4KVector
		k.q8dot[quant.Q5_K] = q8dotQ5KVector
		k.q8dot[quant.Q6_K] = q8dotQ6KVector
		k.q8decode[quant.IQ3_S] = q8decodeIQ3SVector
		k.q8decode[quant.Q8_0] = q8decodeQ8_0Vector
		k.q8decode[quant.Q2_0] = q8decodeQ2_0Vector
		k.q8decode[quant.Q4_0] = q8decodeQ4_0Vector
		k.q8decode[quant.IQ4_NL] = q8decodeIQ4NLVector
		k.q8decode[quant.IQ4_XS] = q8decodeIQ4XSVector
		k.q8decode[quant.MXFP4] = q8decodeMXFP4Vector
		for _, t := range iqVectorTypes {
			k.q8dot[t] = func(row []byte, x *Q8Row) ([8]float32, int) { return q8dotIQGroups(t, false, row, x) }
		}
		k.q8dotDecoded = q8dotDecodedVector
		k.q8quant = q8quantVector
		k.q8rows[quant.Q8_0] = rowsQ8_0AVX2Walk
		k.q8rows[quant.Q2_0] = rowsQ2_0AVX2
		k.q8decodeHalves[quant.Q3_K] = q8decodeQ3KHalves
		k.kminDecode[quant.Q2_K] = kminDecodeQ2KVector
		k.kminDecode[quant.Q4_K] = kminDecodeQ4KVector
		k.kminDecode[quant.Q5_K] = kminDecodeQ5KVector
		for _, t := range []quant.Type{quant.Q2_K, quant.Q4_K, quant.Q5_K} {
			k.kminTile2[t] = kminTile2Vector
		}
		k.paths = "avx2+f16c"
	}
	if c.avx2 && c.f16c && c.avx512vnni {
		// The VEX parts need AVX2 and F16C; the rest is AVX-512 F, BW, VL,
		// VNNI (IQ1_M's kernels BMI2 too).
		k.q8dot[quant.Q2_0] = q8dotQ2_0Vector512
		k.q8dot[quant.IQ3_S] = q8dotIQ3SVector512
		wide := []quant.Type{quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S}
		if c.bmi2 { // IQ1_M's kernels take PEXT and PDEP
			wide = append(wide, quant.IQ1_M)
		}
		for _, t := range wide {
			k.q8dot[t] = func(row []byte, x *Q8Row) ([8]float32, int) { return q8dotIQGroups(t, true, row, x) }
			if t != quant.IQ3_XXS && t != quant.IQ2_XXS {
				k.q8rows[t] = iqLowRows
			}
		}
		k.q8decode[quant.IQ3_XXS] = q8decodeIQ3XXSVector512
		k.q8decode[quant.IQ2_XXS] = q8decodeIQ2XXSVector512
		k.q8decode[quant.IQ3_S] = q8decodeIQ3SVector512
		k.q8decode[quant.IQ1_S] = q8decodeIQ1SVector512
		k.q8decodeHalves[quant.IQ2_XS] = iqHalvesDecoder(quant.IQ2_XS, q8decodeIQ2XSAVX512)
		k.q8decodeHalves[quant.IQ2_S] = iqHalvesDecoder(quant.IQ2_S, q8decodeIQ2SAVX512)
		if c.bmi2 { // PEXT, PDEP
			k.q8decodeHalves[quant.IQ1_M] = iqHalvesDecoder(quant.IQ1_M, q8decodeIQ1MAVX512)
		}
		k.q8dot[quant.Q2_K] = q8dotQ2KVector512
		k.q8dot[quant.Q3_K] = q8dotQ3KVector512
		k.q8dot[quant.Q5_K] = q8dotQ5KVector512
		k.q8dot[quant.Q6_K] = q8dotQ6KVector512
		k.xorReadVec = xorReadAVX512    // AVX-512 F only
		k.attnScores = attnScoresAVX512 // AVX-512 F only
		k.attnSum = attnSumAVX512       // AVX-512 F only
		k.q8rows[quant.Q2_0] = rowsQ2_0AVX512
		k.q8rows[quant.Q8_0] = rowsQ8_0AVX512
		k.q8lanes[quant.Q8_0], k.lanes[quant.Q8_0] = lanesQ8_0AVX512, q8Walk512.n
		k.q8rows[quant.Q2_K] = kRowsAVX512(q2kRows)
		k.q8lanes[quant.Q2_K], k.lanes[quant.Q2_K] = kLanesAVX512(q2kRows), rowStreams
		k.q8rows[quant.Q3_K] = kRowsAVX512(q3kRows)
		k.q8lanes[quant.Q3_K], k.lanes[quant.Q3_K] = kLanesAVX512(q3kRows), rowStreams
		k.q8rows[quant.Q4_K] = kRowsAVX512(q4kRows)
		k.q8lanes[quant.Q4_K], k.lanes[quant.Q4_K] = kLanesAVX512(q4kRows), rowStreams
		k.q8rows[quant.Q5_K] = kRowsAVX512(q5kRows)
		k.q8lanes[quant.Q5_K], k.lanes[quant.Q5_K] = kLanesAVX512(q5kRows), rowStreams
		k.q8rows[quant.Q6_K] = kRowsAVX512(q6kRows)
		k.q8lanes[quant.Q6_K], k.lanes[quant.Q6_K] = kLanesAVX512(q6kRows), rowStreams
		k.tilePlanes, k.q8dotTilePlanes = tilePlanesVector, q8dotTilePlanesVector
		k.kminTile2[quant.Q2_K] = kminTilePlanesVector
		k.kminTile2[quant.Q4_K] = kminTilePlanes1Vector // halves of one scale
		k.kminTile2[quant.Q5_K] = kminTilePlanes1Vector
		k.kminDecodePlanes[quant.Q4_K] = kminDecodeQ4KPlanes
		k.kminDecodePlanes[quant.Q5_K] = kminDecodeQ5KPlanes
		k.kminTile2[quant.Q6_K] = kTilePlanesBiasVector // no min: biased codes
		k.kminDecodePlanes[quant.Q6_K] = kDecodeQ6KPlanes
		k.kminDecodeRows[quant.Q4_K] = kminDecodeQ4KRows
		k.kminDecodeRows[quant.Q5_K] = kminDecodeQ5KRows
		k.kminDecodeRows[quant.Q6_K] = kDecodeQ6KRows
		k.kminTile1G[quant.Q2_K] = kminTile1GMinVector
		k.kminTile1G[quant.Q4_K] = kminTile1G1Vector
		k.kminTile1G[quant.Q5_K] = kminTile1G1Vector
		k.kminTile1G[quant.Q6_K] = kminTile1GBiasVector
		k.paths = "avx2+f16c+avx512vnni"
	}
	if c.avx2 && c.f16c && c.avx512vnni && c.avx512vbmi {
		// The IQ4_NL, MXFP4, IQ4_XS, IQ3_S, IQ3_XXS and IQ2_XXS row kernels
		// and the nibble types' and MXFP4's plane decoders add VBMI (VPERMB,
		// VPERMT2B, VPERMI2B).
		k.q8rows[quant.IQ4_NL] = iq4Rows.rows
		k.q8lanes[quant.IQ4_NL], k.lanes[quant.IQ4_NL] = iq4Rows.lanes, rowStreams
		k.q8rows[quant.MXFP4] = mxfp4Rows.rows
		k.q8lanes[quant.MXFP4], k.lanes[quant.MXFP4] = mxfp4Rows.lanes, rowStreams
		k.q8rows[quant.IQ3_S] = planeRows(iq3RowsAVX512, &iq3sNibbles[0])
		k.q8lanes[quant.IQ3_S], k.lanes[quant.IQ3_S] = planeLanes(iq3RowsAVX512, &iq3sNibbles[0]), rowStreams
		k.q8rows[quant.IQ3_XXS] = planeRows(iq3xxsRowsAVX512, &xxsTab[0])
		k.q8lanes[quant.IQ3_XXS], k.lanes[quant.IQ3_XXS] = planeLanes(iq3xxsRowsAVX512, &xxsTab[0]), rowStreams
		k.q8rows[quant.IQ2_XXS] = planeRows(iq2xxsRowsAVX512, &xxsTab[0])
		k.q8lanes[quant.IQ2_XXS], k.lanes[quant.IQ2_XXS] = planeLanes(iq2xxsRowsAVX512, &xxsTab[0]), rowStreams
		k.q8rows[quant.IQ4_XS] = kRowsAVX512(iq4xsRows)
		k.q8lanes[quant.IQ4_XS], k.lanes[quant.IQ4_XS] = kLanesAVX512(iq4xsRows), rowStreams
		k.q8decodePlanes[quant.IQ4_NL] = q8decodeIQ4NLPlanes
		k.q8decodePlanes[quant.Q4_0] = q8decodeQ4_0Planes
		k.q8decodePlanes[quant.MXFP4] = q8decodeMXFP4Planes
		k.paths += "+vbmi"
	}
	if c.avx2 && c.f16c && c.avx512vnni && c.avx512gfni {
		// The two- and four-row Q2_0 kernels add VBMI and GFNI.
		k.q8rows[quant.Q2_0] = q2QuadRows(q2Rows4AVX512)
		k.q8lanes[quant.Q2_0], k.lanes[quant.Q2_0] = q2QuadLanes(q2Rows4AVX512), 4
		k.paths += "+gfni"
	}
	if c.avx2 && c.f16c && c.avx512bf16 {
		// AVX-512 F, BW and BF16 only (the set keeps the AVX2+F16C kernels);
		// the tiles by fused multiply-adds first, VDPBF16PS where their
		// flags say (qdot_bf16tile_amd64.s).
		k.bf16dot = bf16dotVector512
		k.bf16rows, k.bf16tiles = bf16RowsFMA, bf16TilesFMA
		k.bf16quant = bf16QuantAVX512 // AVX-512 F only
		k.paths += "+avx512bf16"
	}
	return k
}

// asmBuild: this build has the assembly kernels.
const asmBuild = true
