package egress

import (
	"io"
	"testing"
)

// BenchmarkReplacerEcho measures the replacer alone on an echoing stream:
// 64 KiB a time, in writes of 1 KiB, of lines that echo partial guesses
// of the value (right ones and wrong ones), with a whole echo now and
// then.
func BenchmarkReplacerEcho(b *testing.B) {
	value := []byte("sk-live-Zq8pV3xT9wLm2cRf")
	var line []byte
	for k := 1; k <= len(value); k++ {
		line = append(line, "you asked for "...)
		line = append(line, value[:k]...)
		line = append(line, " and got "...)
		line = append(line, value[:k-1]...)
		line = append(line, '~', ' ')
	}
	var data []byte
	for len(data) < 64<<10 {
		data = append(data, line...)
	}
	data = data[:64<<10]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := testReplacer(io.Discard, value, []byte("BOXMAKER-PLACEHOLDER-4f1d0c9a7b3e"))
		for at := 0; at < len(data); at += 1 << 10 {
			r.Write(data[at:min(at+1<<10, len(data))])
		}
		r.Flush()
	}
}
