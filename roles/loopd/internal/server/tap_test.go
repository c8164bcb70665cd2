package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// tap sits between inferproxy and llama-server and records, for every chat
// completion, the slot it named, when it arrived, when its stream's chunks
// came, and the timings of its final chunk: the server's own account of
// what its cache held. With hold set, the first hold chat requests are
// kept back until all of them have arrived (or holdWait passes), so that
// they reach the server together: a test that they were in flight at once
// in loopd, then of what the server did with them.
type tap struct {
	url      string
	upstream string
	hold     int
	tr       *http.Transport

	mu      sync.Mutex
	arrived int
	all     chan struct{}
	reqs    []*tapped
}

// tapped is one chat completion as the tap saw it.
type tapped struct {
	Slot int
	// Held: it waited at the barrier, and all hold requests came.
	Held bool
	// Arrive is when it reached the tap; First when the first data line
	// with answer text passed, and Last the last data line.
	Arrive, First, Last time.Time
	CacheN, PromptN     uint64
	PredictedN          uint64
	Content             string
}

// holdWait bounds the barrier: loopd serialising the requests shows as a
// request that passes without its partner.
const holdWait = 20 * time.Second

func startTap(t *testing.T, upstream string, hold int) *tap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{url: "http://" + ln.Addr().String(), upstream: upstream,
		tr: &http.Transport{Proxy: nil, DisableCompression: true}}
	tp.holdNext(hold)
	srv := &http.Server{Handler: tp}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done; tp.tr.CloseIdleConnections() })
	return tp
}

// holdNext makes the next n chat requests wait for each other.
func (tp *tap) holdNext(n int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.hold, tp.all = tp.arrived+n, make(chan struct{})
}

func (tp *tap) chats() []tapped {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out := make([]tapped, len(tp.reqs))
	for i, r := range tp.reqs {
		out[i] = *r
	}
	return out
}

func (tp *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var rec *tapped
	if r.URL.Path == "/v1/chat/completions" {
		var head struct {
			IDSlot int `json:"id_slot"`
		}
		json.Unmarshal(body, &head)
		rec = &tapped{Slot: head.IDSlot, Arrive: time.Now()}
		tp.mu.Lock()
		tp.arrived++
		held, all := tp.arrived <= tp.hold, tp.all
		if tp.arrived == tp.hold {
			close(tp.all)
		}
		tp.reqs = append(tp.reqs, rec)
		tp.mu.Unlock()
		if held {
			select {
			case <-all:
				rec.Held = true
			case <-time.After(holdWait):
			}
		}
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, tp.upstream+r.URL.Path, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := tp.tr.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	rc := http.NewResponseController(w)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if rec != nil {
				tp.note(rec, line)
			}
			if _, werr := w.Write(line); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// note reads one line of a reply stream.
func (tp *tap) note(rec *tapped, line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: "))
	if !ok {
		return
	}
	now := time.Now()
	var chunk struct {
		Choices []struct {
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Timings *struct {
			CacheN     uint64 `json:"cache_n"`
			PromptN    uint64 `json:"prompt_n"`
			PredictedN uint64 `json:"predicted_n"`
		} `json:"timings"`
	}
	json.Unmarshal(data, &chunk)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	rec.Last = now
	for _, c := range chunk.Choices {
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			if rec.First.IsZero() {
				rec.First = now
			}
			rec.Content += *c.Delta.Content
		}
	}
	if t := chunk.Timings; t != nil {
		rec.CacheN, rec.PromptN, rec.PredictedN = t.CacheN, t.PromptN, t.PredictedN
	}
}

// slotRatio is one chat request's cache figure: cache_n against what its
// slot should hold (the previous request on the same slot: its whole
// prompt and its answer but the last token, which llama-server samples
// and never decodes; session.Expected). Expected is 0 for a slot's first
// request.
type slotRatio struct {
	Slot             int
	CacheN, Expected uint64
}

func (r slotRatio) String() string {
	if r.Expected == 0 {
		return fmt.Sprintf("slot %d: cache_n %d, first on its slot", r.Slot, r.CacheN)
	}
	return fmt.Sprintf("slot %d: cache_n %d / expected %d = %.3f", r.Slot, r.CacheN, r.Expected, float64(r.CacheN)/float64(r.Expected))
}

func ratios(reqs []tapped) []slotRatio {
	last := map[int]tapped{}
	var out []slotRatio
	for _, r := range reqs {
		x := slotRatio{Slot: r.Slot, CacheN: r.CacheN}
		if p, ok := last[r.Slot]; ok {
			x.Expected = p.CacheN + p.PromptN + p.PredictedN - 1
		}
		out = append(out, x)
		last[r.Slot] = r
	}
	return out
}

func describeRatios(rs []slotRatio) string {
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = fmt.Sprintf("  request %d, %s", i+1, r)
	}
	return strings.Join(lines, "\n")
}
