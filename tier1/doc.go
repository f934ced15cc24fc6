// Package tier1 owns what xiaozhi's Tier1Slim provider calls: POST
// /api/voice/escalate for the tools its small local model reaches for
// (memory_lookup, think_hard, take_photo, play_song), and the two memory
// writes of every turn, /api/voice/remember and /api/voice/memory_log. Its
// sub-package memstore owns the writes into ZeroClaw's brain.db (a queue, a
// single writer, an fsynced journal) and the reads memory_lookup makes.
//
// Escalations always answer 200 {"result": …} with bridge.py's exact
// strings, within the caller's budget: each short tool is bounded at 4.5 s
// (the caller waits 5 s) and think_hard at 28 s (it waits 30 s). Memory
// writes answer 204 once journalled and reach brain.db from the writer; a
// full queue answers 503 and counts dotty_memory_writes_dropped_total.
//
// It depends on small interfaces, not on other features: Memory
// (*memstore.Store), Vision (the vision cache's freshest photo) and
// Xiaozhi (the robot's admin API), all given in Config.
package tier1
