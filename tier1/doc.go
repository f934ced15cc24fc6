// Package tier1 serves xiaozhi's Tier1Slim provider: /api/voice/escalate with its tools and
// the /api/voice/remember and /api/voice/memory_log writes into ZeroClaw's brain.db. It
// arrives with issue 4.
package tier1
