//go:build !unix

package osutil

import "os"

const oNonblock = 0

func lock(*os.File) error { return nil }

// tryLock: without flock no temporary file can be told stale, so none is.
func tryLock(*os.File) bool { return false }

// Free is not known here; CheckSpace then checks nothing.
func Free(string) (int64, error) { return 0, errNoStatfs }
