//go:build !linux

package calib

import "os"

const canAdvise = false

func adviseWillNeed(*os.File, int64, int64) {}
