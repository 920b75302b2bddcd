package main

import "os"

// inputSize is a file's size, for progress totals.
func inputSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
