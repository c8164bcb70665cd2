package fakellama

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
)

// The fake's /tokenize: a toy vocabulary of the 256 bytes (ids 0 to 255)
// and the special tokens below, tokenized as llama.cpp does it: first the
// text is cut at every special token's text, longest first, skipping
// control tokens unless special parsing is on (user-defined ones are always
// cut out), and what is left becomes one token per byte. Enough for
// loopd's derivation of a model's special tokens to run against the fake;
// the real thing is tested against llama-server itself.

// Special is one special token of the fake's vocabulary.
type Special struct {
	ID      int
	Text    string
	Control bool // matched only with parse_special; else user-defined
}

// Specials are the fake vocabulary's special tokens: ChatML's, Hermes',
// two that no fixed list names, and a whitespace one.
var Specials = []Special{
	{256, "<|im_start|>", true},
	{257, "<|im_end|>", true},
	{258, "<tool_call>", false},
	{259, "</tool_call>", false},
	{260, "<think>", false},
	{261, "</think>", false},
	{262, "\u27e8fake:turn\u27e9", true},
	{263, "[[fake-tool]]", false},
	{264, "\n\n\n", false},
}

// NVocab is the fake vocabulary's size.
var NVocab = 256 + len(Specials)

// bySize is Specials longest first, as llama.cpp matches them.
var bySize = func() []Special {
	s := append([]Special(nil), Specials...)
	sort.SliceStable(s, func(i, j int) bool { return len(s[i].Text) > len(s[j].Text) })
	return s
}()

type frag struct {
	text string
	tok  int // -1: text still to tokenize
}

func fakeTokenize(s string, parseSpecial bool) []int {
	frags := []frag{{s, -1}}
	for _, sp := range bySize {
		if sp.Control && !parseSpecial {
			continue
		}
		var out []frag
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f)
				continue
			}
			t := f.text
			for {
				i := strings.Index(t, sp.Text)
				if i < 0 {
					break
				}
				if i > 0 {
					out = append(out, frag{t[:i], -1})
				}
				out = append(out, frag{tok: sp.ID})
				t = t[i+len(sp.Text):]
			}
			if t != "" {
				out = append(out, frag{t, -1})
			}
		}
		frags = out
	}
	var ids []int
	for _, f := range frags {
		if f.tok >= 0 {
			ids = append(ids, f.tok)
			continue
		}
		for i := 0; i < len(f.text); i++ {
			ids = append(ids, int(f.text[i]))
		}
	}
	return ids
}

func fakePiece(id int) (any, bool) {
	switch {
	case id >= 0 && id < 256:
		if id < utf8.RuneSelf {
			return string(rune(id)), true
		}
		return []any{id}, true // not UTF-8 alone: llama-server sends the bytes
	case id >= 256 && id < NVocab:
		return Specials[id-256].Text, true
	}
	return nil, false
}

// tokenize answers POST /tokenize as llama-server does.
func (s *Server) tokenize(w http.ResponseWriter, body []byte) {
	var req struct {
		Content      json.RawMessage `json:"content"`
		ParseSpecial *bool           `json:"parse_special"`
		WithPieces   bool            `json:"with_pieces"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusInternalServerError, "Failed to parse request: "+err.Error())
		return
	}
	special := req.ParseSpecial == nil || *req.ParseSpecial
	var parts []json.RawMessage
	if err := json.Unmarshal(req.Content, &parts); err != nil {
		parts = []json.RawMessage{req.Content}
	}
	var ids []int
	for _, p := range parts {
		var text string
		if json.Unmarshal(p, &text) == nil {
			ids = append(ids, fakeTokenize(text, special)...)
			continue
		}
		var id int
		if err := json.Unmarshal(p, &id); err != nil {
			writeError(w, http.StatusInternalServerError, "content: "+err.Error())
			return
		}
		ids = append(ids, id)
	}
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
		if req.WithPieces {
			piece, ok := fakePiece(id)
			if !ok {
				writeError(w, http.StatusInternalServerError, "invalid token id")
				return
			}
			out[i] = object{{"id", id}, {"piece", piece}}
		}
	}
	writeJSON(w, http.StatusOK, object{{"tokens", out}})
}
