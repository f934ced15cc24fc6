// Package emoji is the reply text pipeline: the nine-emoji allowlist and its fallback, the
// content filter, text cleaning for speech, the sentence cap, the per-stream processor and
// the emoji-to-emotion maps. It arrives with issue 3 (voice turns).
package emoji
