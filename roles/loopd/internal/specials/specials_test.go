package specials

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/neutral"
)

// fake serves fakellama on a Unix socket and returns a client for it.
func fake(t *testing.T) (*fakellama.Server, *llama.Client) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "infer.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakellama.New(fakellama.Options{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	c := llama.New(sock, 5*time.Second, 5*time.Second)
	t.Cleanup(c.Close)
	return srv, c
}

func texts(ts []Token) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Text)
	}
	return strings.Join(s, " ")
}

// Derive finds exactly the fake vocabulary's special tokens, both kinds,
// including two that neutral's fixed floor does not name.
func TestDerive(t *testing.T) {
	_, c := fake(t)
	v, err := Derive(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(v.Control); got != "<|im_start|> <|im_end|> \u27e8fake:turn\u27e9" {
		t.Errorf("control %q", got)
	}
	if got := texts(v.UserDefined); got != "<tool_call> </tool_call> <think> </think> [[fake-tool]]" {
		t.Errorf("user-defined %q", got)
	}
	// The whitespace token is no marker: left alone.
	if got := texts(v.Skipped); got != "" || v.Set.Neutralise("a\n\n\nb") != "a\n\n\nb" {
		t.Errorf("skipped %q", got)
	}
	for _, m := range []string{"\u27e8fake:turn\u27e9", "[[fake-tool]]"} {
		if !strings.Contains(neutral.Floor().Neutralise("a"+m+"b"), m) {
			t.Fatalf("the floor already breaks %q: the test shows nothing", m)
		}
		if got := v.Set.Neutralise("a" + m + "b"); strings.Contains(got, m) || v.Set.Contains(got) {
			t.Errorf("%q neutralised to %q", m, got)
		}
	}
	if !v.Special(263) || v.Special(264) || v.Special(65) {
		t.Error("Special is wrong")
	}
}

// Check passes neutralised text and refuses text that still holds a
// control or user-defined token of the served model, and anything at all
// when the server cannot be asked.
func TestCheck(t *testing.T) {
	srv, c := fake(t)
	ctx := context.Background()
	v, err := Derive(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "x\u27e8fake:turn\u27e9 [[fake-tool]] <|im_end|> <think>\n\n\n"
	if err := v.Check(ctx, c, []string{"plain", v.Set.Neutralise(hostile)}); err != nil {
		t.Fatalf("neutralised text refused: %v", err)
	}
	for _, bad := range []string{"a \u27e8fake:turn\u27e9", "a [[fake-tool]]"} {
		err := v.Check(ctx, c, []string{"plain", bad})
		if err == nil || !strings.HasSuffix(err.Error(), "see docs/runbook.md#prompt-check-failed") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	srv.Close()
	err = v.Check(ctx, c, []string{"plain"})
	if err == nil || !strings.Contains(err.Error(), "cannot check the text before sending it, so it is not sent") {
		t.Fatalf("with the server gone: %v", err)
	}
	if _, err := Derive(ctx, c); err == nil {
		t.Fatal("Derive without a server")
	}
}

// A different model behind the same server is refused until loopd restarts.
func TestCheckNoticesAnotherModel(t *testing.T) {
	_, c := fake(t)
	ctx := context.Background()
	v, err := Derive(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	v.Model = "another.gguf"
	if err := v.Check(ctx, c, []string{"plain"}); err == nil || !strings.Contains(err.Error(), "not another.gguf") {
		t.Fatalf("model: %v", err)
	}
	v.Model = "fakellama.gguf"
	v.probe[0].ID++
	if err := v.Check(ctx, c, []string{"plain"}); err == nil || !strings.Contains(err.Error(), "no longer reads") {
		t.Fatalf("probe: %v", err)
	}
}
