// Package neutral keeps untrusted text from speaking the chat template's
// language. llama-server renders the messages with the model's template and
// then tokenizes the whole prompt with special tokens enabled, so the text
// "<|im_end|>" inside a tool result becomes the real end-of-turn token: a
// web page could close the tool's turn and open a fake user or system turn.
//
// Neutralise inserts U+200B ZERO WIDTH SPACE after the first character of
// every control string it knows, so "<|im_start|>" reaches the model as
// "<\u200b|im_start|>": the same to a reader, but no longer the special
// token, and no longer anything a template parses as a tool call or tool
// response. A zero-width space was chosen over replacing or deleting
// characters because it changes what the model reads least (quoted code
// and documentation that mention the markers stay legible) and it cannot
// itself form a marker. Any "<|" is neutralised, which covers every
// <|...|> token (ChatML, Llama 3, Phi, gpt-oss, Granite, ...) without
// listing each; the rest are listed in Markers.
//
// The session log keeps the original text; only what is sent is changed.
package neutral

import "strings"

// ZWSP is the character inserted.
const ZWSP = "\u200b"

// Markers are the control strings neutralised besides any "<|". Matching
// is exact (special tokens are case-sensitive). Keep the list sorted by
// family; add to it when a new template family is served.
var Markers = []string{
	// Every <|...|> token: ChatML (<|im_start|>, <|im_end|>, <|endoftext|>),
	// Llama 3 (<|start_header_id|>, <|eot_id|>, <|python_tag|>), Phi,
	// gpt-oss harmony (<|channel|>, <|message|>, <|call|>), Granite.
	"<|",
	// DeepSeek's full-width bars: <｜begin▁of▁sentence｜>, <｜tool▁calls▁begin｜>.
	"<｜",
	// Hermes / Qwen tool markup.
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	"<tools>", "</tools>", "<function=", "</function>", "<parameter=", "</parameter>",
	// Reasoning blocks.
	"<think>", "</think>",
	// Gemma.
	"<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
	// Llama 2 and Mistral.
	"<s>", "</s>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
	"[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
	"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
	// Command-R.
	"<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
}

// firsts holds the first byte of every marker, to skip quickly past text
// that cannot start one.
var firsts [256]bool

func init() {
	for _, m := range Markers {
		firsts[m[0]] = true
	}
}

// Neutralise returns s with a ZWSP after the first character of every
// marker occurrence. Text without markers is returned unchanged (and
// unallocated). Overlapping occurrences are each broken, because the scan
// resumes one byte after a match's first character.
func Neutralise(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if !firsts[s[i]] || !startsMarker(s[i:]) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[last : i+1])
		b.WriteString(ZWSP)
		last = i + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func startsMarker(s string) bool {
	for _, m := range Markers {
		if strings.HasPrefix(s, m) {
			return true
		}
	}
	return false
}

// Contains reports whether s holds any marker: true of nothing Neutralise
// returns.
func Contains(s string) bool {
	for i := 0; i < len(s); i++ {
		if firsts[s[i]] && startsMarker(s[i:]) {
			return true
		}
	}
	return false
}
