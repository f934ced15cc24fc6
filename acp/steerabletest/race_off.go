//go:build !race

package steerabletest

const raceEnabled = false
