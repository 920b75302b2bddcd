package evalq

import (
	"fmt"
	"strings"
)

// Scoring chooses which positions of each window are scored.
type Scoring uint8

const (
	// ScoreAll scores every position that has a next token: the logits at
	// positions 0..n-2 predict tokens 1..n-1.
	ScoreAll Scoring = iota
	// ScoreSecondHalf scores what llama-perplexity scores (its
	// first = n_ctx/2): the logits at positions n/2..n-2 predict tokens
	// n/2+1..n-1, so every scored token has at least half a window of
	// context. Figures made so compare with llama.cpp's own.
	ScoreSecondHalf
)

var scoringNames = [...]string{ScoreAll: "all", ScoreSecondHalf: "second-half"}

func (s Scoring) String() string {
	if int(s) < len(scoringNames) {
		return scoringNames[s]
	}
	return fmt.Sprintf("Scoring(%d)", s)
}

// ScoringNames lists the accepted names of ParseScoring.
func ScoringNames() []string { return scoringNames[:] }

// ParseScoring reads a scoring by name ("all", "second-half").
func ParseScoring(name string) (Scoring, error) {
	for i, n := range scoringNames {
		if n == name {
			return Scoring(i), nil
		}
	}
	return 0, fmt.Errorf("scoring %q: want one of %s", name, strings.Join(scoringNames[:], ", "))
}

// First is the first scored position of a window of n tokens; positions
// First(n)..n-2 are scored.
func (s Scoring) First(n int) int {
	if s == ScoreSecondHalf {
		return n / 2
	}
	return 0
}

// Scored is how many positions of a window of n tokens are scored.
func (s Scoring) Scored(n int) int { return max(0, n-1-s.First(n)) }
