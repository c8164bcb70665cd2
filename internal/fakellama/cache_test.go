package fakellama

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	user2     = `{"role":"user","content":"And the date?"}`
	asstExact = `{"role":"assistant","content":"It is noon.","reasoning_content":"think"}`
	asstOther = `{"role":"assistant","content":"It is 12:00.","reasoning_content":"think"}`
	asstNoR   = `{"role":"assistant","content":"It is noon."}`
)

// chatStats sends body and returns the recorded cache numbers, after
// checking that the answer's timings say the same.
func chatStats(t *testing.T, s *Server, url, body string) ChatStats {
	t.Helper()
	status, b := post(t, url, body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	reqs := s.Requests()
	st := reqs[len(reqs)-1].Chat
	var ans struct {
		Timings struct {
			CacheN     int `json:"cache_n"`
			PromptN    int `json:"prompt_n"`
			PredictedN int `json:"predicted_n"`
		} `json:"timings"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatal(err)
	}
	tm := ans.Timings
	if tm.CacheN != st.CacheN || tm.PromptN != st.PromptN || tm.PredictedN != st.PredictedN ||
		st.CacheN+st.PromptN != st.PromptTokens {
		t.Fatalf("timings %+v, recorded %+v", tm, st)
	}
	return *st
}

func TestCacheFollowsHistory(t *testing.T) {
	s, url := start(t, Options{Script: func(int, *ChatRequest) Reply {
		return Reply{Reasoning: "think", Content: "It is noon."}
	}})
	first := chatStats(t, s, url, conversation(false, sys, user1))
	if first.CacheN != 0 || first.PromptN != first.PromptTokens {
		t.Fatalf("cold slot: %+v", first)
	}
	slot := first.PromptTokens + first.PredictedN
	if got := s.SlotTokens(0); got != slot {
		t.Fatalf("slot holds %d tokens, want prompt+generated %d", got, slot)
	}

	// The history replayed exactly: the cache covers the previous prompt
	// and the whole previous reply.
	exact := chatStats(t, s, url, conversation(false, sys, user1, asstExact, user2))
	if exact.CacheN != slot {
		t.Fatalf("exact replay: cache_n %d, want %d (%+v)", exact.CacheN, slot, exact)
	}

	// The reply changed in the middle: a real cache loss, from there on.
	other := chatStats(t, s, url, conversation(false, sys, user1, asstOther, user2))
	if other.CacheN <= first.PromptTokens || other.CacheN >= slot {
		t.Fatalf("changed reply: cache_n %d, want between %d and %d", other.CacheN, first.PromptTokens, slot)
	}

	// reasoning_content dropped from the history: the cache ends where
	// the reply starts.
	noR := chatStats(t, s, url, conversation(false, sys, user1, asstNoR, user2))
	if noR.CacheN != first.PromptTokens {
		t.Fatalf("dropped reasoning: cache_n %d, want %d", noR.CacheN, first.PromptTokens)
	}

	// The same prompt again: all but the last token, as llama-server does.
	again := chatStats(t, s, url, conversation(false, sys, user1, asstNoR, user2))
	if again.CacheN != again.PromptTokens-1 || again.PromptN != 1 {
		t.Fatalf("same prompt: %+v", again)
	}

	// cache_prompt false reuses nothing.
	off := strings.Replace(conversation(false, sys, user1, asstNoR, user2), `"stream":false`, `"stream":false,"cache_prompt":false`, 1)
	if st := chatStats(t, s, url, off); st.CacheN != 0 {
		t.Fatalf("cache_prompt false: %+v", st)
	}
}

func TestSlotsAreSeparate(t *testing.T) {
	s, url := start(t, Options{Slots: 2})
	body := conversation(false, sys, user1)
	chatStats(t, s, url, body)
	one := strings.Replace(body, `"stream":false`, `"stream":false,"id_slot":1`, 1)
	if st := chatStats(t, s, url, one); st.CacheN != 0 || st.Slot != 1 {
		t.Fatalf("fresh slot 1: %+v", st)
	}
	if st := chatStats(t, s, url, body); st.CacheN != st.PromptTokens-1 || st.Slot != 0 {
		t.Fatalf("slot 0 after slot 1 was used: %+v", st)
	}
	bad := strings.Replace(body, `"stream":false`, `"stream":false,"id_slot":2`, 1)
	if status, b := post(t, url, bad); status != 400 || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
		t.Fatalf("id_slot 2 of 2: %d %s", status, b)
	}
}

func TestContextSize(t *testing.T) {
	_, url := start(t, Options{NCtx: 20})
	status, b := post(t, url, conversation(false, sys, user1))
	want := `"type":"exceed_context_size_error","n_prompt_tokens":`
	if status != 400 || !strings.Contains(string(b), want) || !strings.HasSuffix(string(b), `"n_ctx":20}}`) ||
		!strings.Contains(string(b), "exceeds the available context size (20 tokens)") {
		t.Fatalf("over n_ctx: %d %s", status, b)
	}
}

func TestTokenizerIsStableAtNewlines(t *testing.T) {
	a, b := "<|im_start|>user\nhéllo wonderful\n", "world<|im_end|>\n"
	if got, want := len(tokenize(a+b)), len(tokenize(a))+len(tokenize(b)); got != want {
		t.Fatalf("tokenize(a+b) has %d tokens, a and b %d", got, want)
	}
	if got := strings.Join(tokenize("wonderful"), "|"); got != "wonder|ful" {
		t.Fatalf("long word: %s", got)
	}
}

// An answer longer than max_tokens stops there with finish_reason
// "length", as does one that fills the context; the cut answer, replayed,
// still hits the cache in full.
func TestAnswerCut(t *testing.T) {
	long := strings.Repeat("word ", 50)
	s, url := start(t, Options{NCtx: 120, Script: func(int, *ChatRequest) Reply { return Reply{Content: long} }})
	capped := strings.Replace(conversation(false, sys, user1), `"stream":false`, `"stream":false,"max_tokens":7`, 1)
	status, b := post(t, url, capped)
	var ans struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if status != 200 || json.Unmarshal(b, &ans) != nil || len(ans.Choices) != 1 {
		t.Fatalf("%d %s", status, b)
	}
	reqs := s.Requests()
	st := reqs[len(reqs)-1].Chat
	if c := ans.Choices[0]; c.FinishReason != "length" || c.Message.Content != "word word word word" || st.PredictedN != 7 {
		t.Fatalf("capped: %+v %+v", c, st)
	}
	// The cut answer replayed: the cache holds the prompt and all 7 tokens.
	asst := `{"role":"assistant","content":"word word word word"}`
	next := chatStats(t, s, url, conversation(false, sys, user1, asst, user2))
	if next.CacheN != st.PromptTokens+7 {
		t.Fatalf("replay of the cut answer: cache_n %d, want %d", next.CacheN, st.PromptTokens+7)
	}
	// No cap: the answer runs until the context is full.
	full := chatStats(t, s, url, conversation(false, sys, user1))
	if full.PromptTokens+full.PredictedN != 120 {
		t.Fatalf("context full: %+v", full)
	}
}

// A request that names a busy slot waits for it and says so (Waited); one
// on another slot is served at once.
func TestBusySlotWaits(t *testing.T) {
	slow := Reply{Content: "slow", Fault: Fault{FirstByteDelay: time.Second}}
	s, url := start(t, Options{Slots: 2, Script: Queue(slow, Reply{Content: "a"}, Reply{Content: "b"})})
	body := conversation(false, sys, user1)
	done := make(chan struct{})
	send := func(body string) {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	go func() { send(body); close(done) }()
	for {
		if r := s.Requests(); len(r) == 1 && r[0].Chat != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	for _, slot := range []string{"0", "1"} {
		wg.Go(func() {
			send(strings.Replace(body, `"stream":false`, `"stream":false,"id_slot":`+slot, 1))
		})
	}
	wg.Wait()
	<-done
	for _, r := range s.Requests() {
		if want := r.Chat.Slot == 0 && string(r.Body) != body; r.Chat.Waited != want {
			t.Errorf("slot %d: waited %v, want %v", r.Chat.Slot, r.Chat.Waited, want)
		}
	}
}
