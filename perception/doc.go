// Package perception ingests the robot's perception events, keeps per-device state,
// fans events out to the robot-behaviour consumers and streams them over SSE. It arrives
// with issue 5.
package perception
