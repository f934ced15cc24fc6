//go:build race

package steerabletest

const raceEnabled = true
