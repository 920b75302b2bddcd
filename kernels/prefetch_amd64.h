// The DotQ8 kernels' software prefetch (included by their files).

// PFAHEAD(n, bytes): prefetch n lines of the block 8 blocks of the given
// size ahead of SI, so a row streamed from memory (and the rows after it,
// which follow it in memory) is in cache when the loop gets there; the
// lines per block are at least its bytes / 64, so the prefetches keep pace.
#define PFAHEAD1(bytes) \
	PREFETCHT0 (8*(bytes))(SI)
#define PFAHEAD2(bytes) \
	PFAHEAD1(bytes) \
	PREFETCHT0 (8*(bytes)+64)(SI)
#define PFAHEAD3(bytes) \
	PFAHEAD2(bytes) \
	PREFETCHT0 (8*(bytes)+128)(SI)
#define PFAHEAD4(bytes) \
	PFAHEAD3(bytes) \
	PREFETCHT0 (8*(bytes)+192)(SI)
