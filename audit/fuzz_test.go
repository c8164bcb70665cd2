package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"boxmaker/wire"
)

// FuzzVerifier feeds arbitrary bytes as log files: the verifier must never
// panic, and VerifyDir's way of feeding it (chunks of lines prepared on
// several goroutines) must come to exactly what feeding the lines one by one
// does.
func FuzzVerifier(f *testing.F) {
	fg := newForge(f)
	a, b := fg.next(decision("chat-1", 1, wire.OutcomeAsk{})), fg.next(approval("chat-1", 1, 0))
	f.Add(bytes.Join([][]byte{a, b, fg.next(someEvent)}, []byte{'\n'}), uint8(1))
	f.Add(append(append(a, '\n'), b[:9]...), uint8(0))
	f.Add([]byte("\n\n{}\n"), uint8(2))
	// The tampering suite's logs, each as two files.
	cases, _ := filepath.Glob(filepath.Join(fixRoot, "*", "audit"))
	for _, dir := range cases {
		var all []byte
		split := 0
		for i, name := range logNamesT(f, dir) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				f.Fatal(err)
			}
			if i == 0 {
				split = bytes.Count(b, []byte{'\n'})
			}
			all = append(all, b...)
		}
		f.Add(all, uint8(split))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		// The first split lines go to one file, the rest to the next.
		var files [2][]byte
		n := 0
		for i := 0; i < len(data); i++ {
			if n < int(split) {
				files[0] = append(files[0], data[i])
			} else {
				files[1] = append(files[1], data[i])
			}
			if data[i] == '\n' {
				n++
			}
		}
		v, pv := NewChainVerifier(), NewChainVerifier()
		for i, content := range files {
			name := []string{f1, f2}[i]
			v.File(name)
			lines := bytes.SplitAfter(content, []byte{'\n'})
			for j, l := range lines {
				if len(l) == 0 {
					continue
				}
				nl := l[len(l)-1] == '\n'
				v.Line(bytes.TrimSuffix(l, []byte{'\n'}), j == len(lines)-1 || !nl, nl)
			}
			if err := feedReader(pv, name, bytes.NewReader(content), int64(len(content))); err != nil {
				t.Fatal(err)
			}
		}
		want, got := v.Finish(), pv.Finish()
		var out bytes.Buffer
		if _, err := FormatReport(&out, want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chunked on several goroutines:\n%+v\nline by line:\n%+v", got, want)
		}
	})
}
