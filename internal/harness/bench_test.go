package harness_test

import (
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// BenchmarkTurn times whole turns through every process but the client: one whose tool
// runs in a container (shell in the scratch folder, an auto grant) and one
// whose tool is denied (http_fetch, no grant), against the stand-in model,
// which answers at once. The denied turn is everything the harness does
// outside the model and the container, bar the Result and state writes, so
// denied/allowed estimates the share of a turn spent outside them.
func BenchmarkTurn(b *testing.B) {
	h, _ := start(b, 120000)
	// The turn is timed from the say to the final event on loop.sock, as
	// a client in this process sees it: no client process start-up.
	turn := func(text string) time.Duration {
		start := time.Now()
		conn, err := net.Dial("unix", h.LoopSocket())
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		if err := wire.WriteEnvelope(conn, wire.Request(1, wire.Say{Text: text})); err != nil {
			b.Fatal(err)
		}
		for {
			env, err := wire.ReadEnvelope(conn)
			if err != nil {
				b.Fatal(err)
			}
			if env.Final {
				if r, ok := env.Msg.(wire.TurnReply); !ok || !strings.Contains(r.Content, "The tool answered") {
					b.Fatalf("the turn ended with %#v", env.Msg)
				}
				return time.Since(start)
			}
		}
	}
	// Back to back, as the stand-in model allows; then spaced, each turn
	// after a pause that stands in for a real model's time, in which
	// brokerd's work after a call (the container's removal, the next
	// one's container made ahead) is done.
	var allowed, denied, allowedSpaced, deniedSpaced []time.Duration
	for b.Loop() {
		allowed = append(allowed, turn("List the scratch folder."))
		denied = append(denied, turn("Fetch a web page for me."))
	}
	b.StopTimer()
	for range len(allowed) {
		time.Sleep(thinkTime)
		allowedSpaced = append(allowedSpaced, turn("List the scratch folder."))
		time.Sleep(thinkTime)
		deniedSpaced = append(deniedSpaced, turn("Fetch a web page for me."))
	}
	// The model's part of a denied turn: its two requests, sent straight
	// to the stand-in model with a body of the same shape.
	var model []time.Duration
	for range len(denied) {
		start := time.Now()
		for range 2 {
			modelRequest(b, h.ModelAddr())
		}
		model = append(model, time.Since(start))
	}
	a, d, m := median(allowed), median(denied), median(model)
	b.ReportMetric(float64(a.Microseconds())/1000, "allowed-ms/p50")
	b.ReportMetric(float64(d.Microseconds())/1000, "denied-ms/p50")
	b.ReportMetric(float64(m.Microseconds())/1000, "model-ms/p50")
	b.ReportMetric(float64(d)/float64(a), "denied/allowed")
	b.ReportMetric(float64(d-m)/float64(a), "outside-share")
	as, ds := median(allowedSpaced), median(deniedSpaced)
	b.ReportMetric(float64(as.Microseconds())/1000, "allowed-spaced-ms/p50")
	b.ReportMetric(float64(ds.Microseconds())/1000, "denied-spaced-ms/p50")
	b.ReportMetric(float64(ds-m)/float64(as), "outside-share-spaced")
}

// thinkTime is the pause before each spaced turn: far less than a real
// model takes, and more than brokerd's work after a call.
const thinkTime = 300 * time.Millisecond

// modelRequest sends one streamed chat request like loopd's (three tools,
// a system prompt, a user message) and reads the stream to its end.
func modelRequest(b *testing.B, addr string) {
	tool := `{"type":"function","function":{"name":"call_tool","description":"` + strings.Repeat("Call a tool. ", 20) +
		`","parameters":{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object"}},"required":["tool","arguments"]}}}`
	body := `{"id_slot":0,"cache_prompt":true,"stream":true,"tools":[` + tool + "," + tool + "," + tool +
		`],"messages":[{"role":"system","content":"` + strings.Repeat("You are the owner's assistant. ", 20) +
		`"},{"role":"user","content":"Fetch a web page for me."}]}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
		b.Fatalf("model: %d %v", resp.StatusCode, err)
	}
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}
