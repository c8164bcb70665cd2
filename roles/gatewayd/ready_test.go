package gatewayd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/internal/syncbuf"
)

// TestSocketMeansCursors: gateway.sock appears only once every owner's
// channel has its cursor. Whoever waits for the socket (the harness, a
// unit ordered after gatewayd) may post at once; a post from before the
// cursor would be taken for history and never answered, as
// TestMattermostConversations once found under load.
func TestSocketMeansCursors(t *testing.T) {
	for round := range 5 {
		mm, err := fakemm.Start()
		if err != nil {
			t.Fatal(err)
		}
		owner, bot := mm.AddUser("owner", false), mm.AddUser("boxbot", true)
		dir, err := os.MkdirTemp("", "bxg") // short: socket paths are at most 107 bytes
		if err != nil {
			t.Fatal(err)
		}
		token := filepath.Join(dir, "token")
		if err := os.WriteFile(token, []byte(bot.Token), 0o600); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, "run", "gateway.sock")
		cfg := filepath.Join(dir, "gatewayd.toml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, "[mattermost]\nurl = %q\ntoken_file = %q\nowners = [%q]\n[sockets]\ngateway = %q\nloop = %q\n[paths]\nhome = %q\n",
			mm.URL(), token, owner.ID, sock, filepath.Join(dir, "loop", "loop.sock"), dir), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var stderr syncbuf.Buffer
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, cfg, &stderr) }()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := os.Lstat(sock); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gateway.sock never appeared\n%s", stderr.String())
			}
			time.Sleep(time.Millisecond)
		}
		// The moment it is there, the state file holds the owner's cursor.
		var st struct {
			Cursors []struct {
				Channel string `json:"channel"`
			} `json:"cursors"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "gateway", "state.json"))
		if err == nil {
			err = json.Unmarshal(b, &st)
		}
		if err != nil || len(st.Cursors) != 1 || st.Cursors[0].Channel != mm.DirectChannel(bot.ID, owner.ID) {
			t.Fatalf("round %d: gateway.sock is there, the cursors are %+v (%v)", round, st.Cursors, err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		mm.Close()
		os.RemoveAll(dir)
	}
}
