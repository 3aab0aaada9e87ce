//go:build !race

package server

// raceDetector: see race_on_test.go.
const raceDetector = false
