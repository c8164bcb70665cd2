package harness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Llama says how to run llama.cpp's llama-server in place of the stand-in
// model: the real server's templating, tool-call and reasoning parsing,
// tokenizer and prompt cache, with whatever GGUF model the caller made.
type Llama struct {
	// Server is the llama-server binary (just llama-setup builds it).
	Server string
	// Model is the GGUF file it loads; SwitchModel changes it.
	Model string
	// Args are more flags, for example "--jinja", "-c", "4096", "-np",
	// "1", "-t", "1", "--log-prompts-dir", DIR. The harness adds -m,
	// --host and --port.
	Args []string
}

// startLlama starts llama-server on a loopback port (the same one on a
// restart, since inferproxy's config names it) and waits until /health
// says it has loaded the model.
func (h *Harness) startLlama(ctx context.Context) error {
	if h.modelAt == "" {
		// A free port, found by listening and closing: llama-server takes
		// a port number, not a listener, and prints no address file.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("harness: finding a port for llama-server: %w", err)
		}
		h.modelAt = ln.Addr().String()
		ln.Close()
	}
	host, port, _ := net.SplitHostPort(h.modelAt)
	args := append([]string{"-m", h.o.Llama.Model, "--host", host, "--port", port}, h.o.Llama.Args...)
	p, err := h.spawn("model", h.o.Llama.Server, args...)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	return h.wait(ctx, p, "llama-server's /health", func() bool {
		resp, err := client.Get("http://" + h.modelAt + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// SwitchModel restarts llama-server with another model file, at the same
// address (its prompt cache starts empty), then loopd: loopd learns the
// served model's tokens at startup and sends nothing to a server that
// serves another model until it restarts.
func (h *Harness) SwitchModel(ctx context.Context, model string) error {
	if h.o.Llama == nil {
		return fmt.Errorf("harness: SwitchModel needs Options.Llama")
	}
	h.o.Llama.Model = model
	if err := h.Restart(ctx, "model"); err != nil {
		return err
	}
	return h.Restart(ctx, "loopd")
}

// Restart stops the named process (a role, or "model") as a service
// manager would (SIGTERM, then SIGKILL after 5 s) and starts it again.
func (h *Harness) Restart(ctx context.Context, name string) error {
	p, err := h.running(name)
	if err != nil {
		return err
	}
	p.stop()
	if name == "model" {
		return h.StartModel(ctx)
	}
	return h.StartRole(ctx, name)
}
