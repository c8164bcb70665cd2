package audit

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"boxmaker/wire"
)

// TestVerifyDirLongLinesAndChunks: lines that cross the reader's chunks, and
// one longer than a chunk, are verified as if fed one by one.
func TestVerifyDirLongLinesAndChunks(t *testing.T) {
	f := newForge(t)
	var lines [][]byte
	size := 0
	for i := 0; size < 3*chunkSize; i++ {
		ev := decision("chat-1", uint64(i), wire.OutcomeAllowed{})
		if i == 5 {
			ev.Arguments = strings.Repeat("y", 2*chunkSize+17)
		}
		lines = append(lines, f.next(ev))
		size += len(lines[i]) + 1
	}
	dir := t.TempDir()
	var content []byte
	for _, l := range lines {
		content = append(append(content, l...), '\n')
	}
	content = content[:len(content)-5] // and a torn tail
	if err := os.WriteFile(filepath.Join(dir, f1), content, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := VerifyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := feed(NewChainVerifier(), append(inFile(f1, lines[:len(lines)-1]...),
		fline{f1, lines[len(lines)-1][:len(lines[len(lines)-1])-4], false}))
	if !reflect.DeepEqual(got, want) || got.Failure != nil || got.TornTail == nil || got.Records != uint64(len(lines)-1) {
		t.Fatalf("VerifyDir\n%+v\nline by line\n%+v", got, want)
	}
}
