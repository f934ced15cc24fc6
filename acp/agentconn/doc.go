// Package agentconn is the contract between acp's Supervisor and Pool and
// the protocols that speak to an agent child (acpclient for ACP agents,
// steerable for the steerable sidecar): the Protocol a supervisor opens
// each child with, the Child it hands over, the ChildConn and Conn it and
// the pool drive, the Mailbox a turn's text streams into, and the errors,
// permission decisions and metrics both sides share. It imports neither
// side, so each protocol and acp depend on it alone.
package agentconn
