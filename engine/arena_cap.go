package engine

// machineMemory is the machine's RAM in bytes (0: unknown); a variable so
// that a test can stand for a machine smaller than its model.
var machineMemory = physicalMemory

// DefaultArenaCap is the bound on the default arena (StreamOptions.ArenaMB
// 0, every expert): half the machine's RAM, in bytes; 0 when the RAM is
// unknown (no bound). An arena of more experts than that holds as many as
// fit, and the rest stream; the store's report gives the cap
// (StreamReport.ArenaCapMB) when it applied.
func DefaultArenaCap() uint64 { return machineMemory() / 2 }
