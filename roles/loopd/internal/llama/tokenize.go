package llama

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The tokenizer endpoints: what loopd needs to learn the served model's
// special tokens and to check a text before it is sent (package specials).
// llama-server's POST /tokenize takes "content" as a string or as an array
// mixing strings, each tokenized on its own, and token ids, copied through
// as they are; "parse_special" says whether control tokens are matched
// (user-defined ones always are), and "with_pieces" returns each token's
// text next to its id.

// Sep is the token id put between texts in one TokenizeEach request: no
// token has it, so the answer splits back into one list per text.
const Sep = -1

// maxTokenizeAnswer bounds /tokenize's answer: a whole 256k vocabulary
// with pieces is about 8 MB.
const maxTokenizeAnswer = 64 << 20

// Vocab asks /v1/models for the served model's name and vocabulary size.
func (c *Client) Vocab(ctx context.Context) (model string, nVocab int, err error) {
	body, err := c.get(ctx, "/v1/models")
	if err != nil {
		return "", 0, err
	}
	var m struct {
		Data []struct {
			ID   string `json:"id"`
			Meta struct {
				NVocab int `json:"n_vocab"`
			} `json:"meta"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return "", 0, &Error{What: "the model server's /v1/models is not JSON", Err: err}
	}
	if len(m.Data) != 1 || m.Data[0].Meta.NVocab <= 0 {
		return "", 0, &Error{What: fmt.Sprintf("the model server's /v1/models names no single model with its n_vocab: %s", snippet(body))}
	}
	return m.Data[0].ID, m.Data[0].Meta.NVocab, nil
}

// Piece is one token as /tokenize's with_pieces shows it.
type Piece struct {
	ID int
	// Text is the token's text; Valid is false when that is not UTF-8 (a
	// byte of a longer character), which the server sends as bytes.
	Text  string
	Valid bool
}

// Pieces returns the text of each of ids.
func (c *Client) Pieces(ctx context.Context, ids []int) ([]Piece, error) {
	b := []byte(`{"with_pieces":true,"content":[`)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, "]}"...)
	var out struct {
		Tokens []struct {
			ID    int            `json:"id"`
			Piece jsontext.Value `json:"piece"`
		} `json:"tokens"`
	}
	if err := c.post(ctx, "/tokenize", b, &out); err != nil {
		return nil, err
	}
	if len(out.Tokens) != len(ids) {
		return nil, &Error{What: fmt.Sprintf("/tokenize returned %d pieces for %d token ids", len(out.Tokens), len(ids))}
	}
	ps := make([]Piece, len(ids))
	for i, t := range out.Tokens {
		if t.ID != ids[i] {
			return nil, &Error{What: fmt.Sprintf("/tokenize returned token %d where %d was asked", t.ID, ids[i])}
		}
		ps[i].ID = t.ID
		var s string
		if json.Unmarshal(t.Piece, &s) == nil {
			ps[i].Text, ps[i].Valid = s, utf8.ValidString(s)
			continue
		}
		var raw []byte
		var nums []int
		if err := json.Unmarshal(t.Piece, &nums); err != nil {
			return nil, &Error{What: fmt.Sprintf("/tokenize returned piece %s for token %d", snippet(t.Piece), t.ID)}
		}
		for _, n := range nums {
			raw = append(raw, byte(n))
		}
		ps[i].Text = string(raw)
	}
	return ps, nil
}

// TokenizeEach tokenizes each text on its own, without BOS, in one request,
// with control tokens matched (parseSpecial, as the server reads a
// rendered prompt) or not.
func (c *Client) TokenizeEach(ctx context.Context, texts []string, parseSpecial bool) ([][]int, error) {
	b := []byte(`{"add_special":false,"parse_special":`)
	b = strconv.AppendBool(b, parseSpecial)
	b = append(b, `,"content":[`...)
	for i, t := range texts {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = jsontext.AppendQuote(b, t); err != nil {
			return nil, &Error{What: "a text to tokenize is not UTF-8", Err: err}
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, Sep, 10)
	}
	b = append(b, "]}"...)
	var out struct {
		Tokens []int `json:"tokens"`
	}
	if err := c.post(ctx, "/tokenize", b, &out); err != nil {
		return nil, err
	}
	res := make([][]int, 0, len(texts))
	start := 0
	for i, id := range out.Tokens {
		if id == Sep {
			res = append(res, out.Tokens[start:i:i])
			start = i + 1
		}
	}
	if len(res) != len(texts) || start != len(out.Tokens) {
		return nil, &Error{What: fmt.Sprintf("/tokenize's answer does not split into %d texts", len(texts))}
	}
	return res, nil
}

// tokenizeTimeout is the least time a /tokenize request is given: a batch
// of the vocabulary takes the server a second or two on two busy cores, so
// a short reply timeout (meant for a chat's first token) must not cut it.
const tokenizeTimeout = time.Minute

// post sends body to path and decodes the JSON answer into v.
func (c *Client) post(ctx context.Context, path string, body []byte, v any) error {
	ctx, cancel := context.WithTimeout(ctx, max(c.ReplyTimeout, tokenizeTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return &Error{What: "cannot build the request", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return &Error{What: "cannot reach the model server through infer.sock", Err: unwrapURL(err)}
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeAnswer+1))
	if err != nil {
		return &Error{What: "the model server's answer to " + path + " was cut short", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(resp, ans)
	}
	if len(ans) > maxTokenizeAnswer {
		return &Error{What: fmt.Sprintf("the model server's answer to %s is over %d bytes", path, maxTokenizeAnswer)}
	}
	if err := json.Unmarshal(ans, v); err != nil {
		return &Error{What: "the model server's answer to " + path + " is not what was expected", Err: err}
	}
	return nil
}
