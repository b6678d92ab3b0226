//go:build race

package bench

// raceDetector says the tests run under -race.
const raceDetector = true
