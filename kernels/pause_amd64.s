//go:build amd64 && !noasm

#include "textflag.h"

// func spinPause(n int): n PAUSE instructions (n >= 1), the spin-wait hint
// that leaves a hyperthread sibling the core's resources.
TEXT ·spinPause(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX

pauseloop:
	PAUSE
	DECQ CX
	JNZ  pauseloop
	RET
