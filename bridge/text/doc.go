// Package text holds the bridge's general text helpers: Python-compatible
// whitespace (IsSpace, Strip, StripLeft, StripRight: str.isspace, strip,
// lstrip, rstrip) and the one truncation (Truncate with a Cut). It imports
// nothing of the bridge's, so every package may use it; the reply pipeline
// lives in emoji, the safety function for outside text in bridge/prompttext.
package text
