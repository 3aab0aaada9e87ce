//go:build race

package server

// raceDetector: under the race detector every goroutine runs several times
// slower and tail latencies grow with the load, so latency bounds widen.
const raceDetector = true
