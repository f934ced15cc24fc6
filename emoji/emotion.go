package emoji

import (
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// FirmwareEmotions are the six emotions the Stack-chan firmware shows.
var FirmwareEmotions = [...]string{"neutral", "happy", "sleepy", "surprised", "sad", "angry"}

// XiaozhiEmotions maps xiaozhi's 21 emotion ids to their canonical emoji.
var XiaozhiEmotions = map[string]string{
	"neutral": "😶", "happy": "🙂", "laughing": "😆", "funny": "😂", "sad": "😔", "angry": "😠",
	"crying": "😭", "loving": "😍", "embarrassed": "😳", "surprised": "😲", "shocked": "😱",
	"thinking": "🤔", "winking": "😉", "cool": "😎", "relaxed": "😌", "delicious": "🤤",
	"kissy": "😘", "confident": "😏", "sleepy": "😴", "silly": "😜", "confused": "🙄",
}

// firmwareFor is this project's recommended xiaozhi id → firmware emotion map.
var firmwareFor = map[string]string{
	"neutral": "neutral", "happy": "happy", "laughing": "happy", "funny": "happy", "sad": "sad",
	"angry": "angry", "crying": "sad", "loving": "happy", "embarrassed": "surprised",
	"surprised": "surprised", "shocked": "surprised", "thinking": "neutral", "winking": "happy",
	"cool": "happy", "relaxed": "happy", "delicious": "happy", "kissy": "happy",
	"confident": "happy", "sleepy": "sleepy", "silly": "happy", "confused": "neutral",
}

// emojiID maps every emoji of xiaozhi's table (canonical and the four
// aliases 😊 😢 😐 😮) to its id.
var emojiID = func() map[rune]string {
	m := make(map[rune]string, 25)
	for id, e := range XiaozhiEmotions {
		r, _ := utf8.DecodeRuneInString(e)
		m[r] = id
	}
	for e, id := range map[string]string{"😊": "happy", "😢": "sad", "😐": "neutral", "😮": "surprised"} {
		r, _ := utf8.DecodeRuneInString(e)
		m[r] = id
	}
	return m
}()

// XiaozhiEmotion is the xiaozhi id of the allowed emoji starting t, or
// "neutral" when none does.
func XiaozhiEmotion(t string) string {
	e, ok := Leading(t)
	if !ok {
		return "neutral"
	}
	r, _ := utf8.DecodeRuneInString(e)
	return emojiID[r]
}

// FirmwareEmotion is the firmware emotion for the catalogue emoji that
// starts t after whitespace (any of xiaozhi's 21 or the nine allowed),
// "neutral" otherwise.
func FirmwareEmotion(t string) string {
	r, size := utf8.DecodeRuneInString(text.StripLeft(t))
	if size == 0 {
		return "neutral"
	}
	return FirmwareEmotionForID(emojiID[r])
}

// FirmwareEmotionForID maps a xiaozhi id to a firmware emotion, "neutral"
// for unknown ids.
func FirmwareEmotionForID(id string) string {
	if e, ok := firmwareFor[id]; ok {
		return e
	}
	return "neutral"
}
