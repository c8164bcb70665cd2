package specials

import (
	"context"
	"fmt"
	"slices"
)

// Check asks the model server, before a request is sent, whether any of
// texts (untrusted text as neutralised for the request) would still bring
// in a special token: it tokenizes them with special parsing, as the server
// will read the prompt, and without. The server must still serve the model
// Derive learnt (its name and size in /v1/models, and a few known special
// tokens, the probe, coming back as the same ids); any control token of the
// model served makes the two tokenizations differ; and any token Derive
// found special is refused by id. Any failure, including not being
// able to ask, is an error: the request is not sent.
func (v *Vocabulary) Check(ctx context.Context, tk Tokenizer, texts []string) error {
	if len(texts) == 0 {
		return nil
	}
	model, n, err := tk.Vocab(ctx)
	if err != nil {
		return &Error{What: fmt.Sprintf("cannot check the text before sending it, so it is not sent: %v", err)}
	}
	if model != v.Model || n != v.NVocab {
		return &Error{What: fmt.Sprintf("the model server now serves %s (%d tokens), not %s (%d tokens) that loopd learnt at startup, so nothing is sent until loopd restarts",
			model, n, v.Model, v.NVocab)}
	}
	all := make([]string, 0, len(v.probe)+len(texts))
	for _, p := range v.probe {
		all = append(all, p.Text)
	}
	all = append(all, texts...)
	with, err := tokenizeTexts(ctx, tk, all, true)
	if err != nil {
		return &Error{What: fmt.Sprintf("cannot check the text before sending it, so it is not sent: %v", err)}
	}
	for i, p := range v.probe {
		if !slices.Equal(with[i], []int{p.ID}) {
			return &Error{What: fmt.Sprintf("the model server no longer reads %q as token %d: it serves a different model than loopd learnt at startup (%s), so nothing is sent until loopd restarts",
				p.Text, p.ID, v.Model)}
		}
	}
	with = with[len(v.probe):]
	without, err := tokenizeTexts(ctx, tk, texts, false)
	if err != nil {
		return &Error{What: fmt.Sprintf("cannot check the text before sending it, so it is not sent: %v", err)}
	}
	for i := range texts {
		if !slices.Equal(with[i], without[i]) {
			return &Error{What: "a text still holds a control token of the served model after neutralising, so it is not sent"}
		}
		for _, id := range with[i] {
			if v.special[id] {
				return &Error{What: fmt.Sprintf("a text still holds special token %d of the served model after neutralising, so it is not sent", id)}
			}
		}
	}
	return nil
}
