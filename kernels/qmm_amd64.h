// The tiles' reduction of one group for two rows (qmm_amd64.s and
// qmm_k_amd64.s): SUB(j, A, B) leaves sub-block j's eight int32 lane sums of
// row 0 in A and of row 1 in B; TILESUMS(SUB) folds the group's eight
// sub-blocks by VPHADDD into Y4/Y5 (row 0: sub-blocks 0-3 and 4-7) and
// Y8/Y9 (row 1), clobbering Y6, Y7, Y10 and Y11.
#define TILESUMS(SUB) \
	SUB(0, Y4, Y8) \
	SUB(1, Y5, Y9) \
	VPHADDD Y5, Y4, Y4 \
	VPHADDD Y9, Y8, Y8 \
	SUB(2, Y6, Y10) \
	SUB(3, Y7, Y11) \
	VPHADDD Y7, Y6, Y6 \
	VPHADDD Y11, Y10, Y10 \
	VPHADDD Y6, Y4, Y4 \
	VPHADDD Y10, Y8, Y8 \
	SUB(4, Y5, Y9) \
	SUB(5, Y6, Y10) \
	VPHADDD Y6, Y5, Y5 \
	VPHADDD Y10, Y9, Y9 \
	SUB(6, Y6, Y10) \
	SUB(7, Y7, Y11) \
	VPHADDD Y7, Y6, Y6 \
	VPHADDD Y11, Y10, Y10 \
	VPHADDD Y6, Y5, Y5 \
	VPHADDD Y10, Y9, Y9
