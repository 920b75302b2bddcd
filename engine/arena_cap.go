package engine

// DefaultArenaCap is the bound on the default arena (StreamOptions.ArenaMB
// 0, every expert): half the machine's RAM, in bytes; 0 when the RAM is
// unknown (no bound). An arena of more experts than that holds as many as
// fit, and the rest stream.
func DefaultArenaCap() uint64 { return physicalMemory() / 2 }
