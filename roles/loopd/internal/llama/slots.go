package llama

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json"
)

// MaxSlots bounds the slots loopd keeps track of: far beyond any -np a
// server runs with, and small enough that a wrong answer costs nothing.
const MaxSlots = 1024

// TotalSlots asks /props how many slots the server has (llama-server's
// -np), each a prompt cache and a request served at the same time as the
// others. ok is false when /props does not say: the server is then taken
// to have one.
func (c *Client) TotalSlots(ctx context.Context) (n int, ok bool, err error) {
	body, err := c.get(ctx, "/props")
	if err != nil {
		return 0, false, err
	}
	var p struct {
		TotalSlots *int `json:"total_slots"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return 0, false, &Error{What: "the model server's /props is not JSON", Err: err}
	}
	switch {
	case p.TotalSlots == nil || *p.TotalSlots < 1:
		return 1, false, nil
	case *p.TotalSlots > MaxSlots:
		return 0, false, &Error{What: fmt.Sprintf("the model server's /props says total_slots %d, more than loopd will use (%d)", *p.TotalSlots, MaxSlots)}
	}
	return *p.TotalSlots, true, nil
}
