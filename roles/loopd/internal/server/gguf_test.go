package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// ggufVocab reads a GGUF file's tokenizer.ggml.tokens and token_type: the
// vocabulary as the model file itself states it, to check what loopd learns
// through the server against. (Type 2 is unknown, 3 control, 4
// user-defined; llama.cpp may mark more tokens control when it loads.)
func ggufVocab(path string) (tokens []string, types []int32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := &ggufReader{r: bufio.NewReaderSize(f, 1<<20)}
	if magic := r.n(4); r.err == nil && string(magic) != "GGUF" {
		return nil, nil, fmt.Errorf("%s is not GGUF", path)
	}
	if v := r.u32(); v < 2 {
		return nil, nil, fmt.Errorf("GGUF version %d", v)
	}
	r.u64() // tensors
	kvs := r.u64()
	for i := uint64(0); i < kvs && r.err == nil && (tokens == nil || types == nil); i++ {
		key := r.str()
		typ := r.u32()
		switch {
		case key == "tokenizer.ggml.tokens" && typ == 9:
			if et := r.u32(); et != 8 {
				return nil, nil, fmt.Errorf("tokens of type %d", et)
			}
			n := r.u64()
			for j := uint64(0); j < n && r.err == nil; j++ {
				tokens = append(tokens, r.str())
			}
		case key == "tokenizer.ggml.token_type" && typ == 9:
			if et := r.u32(); et != 5 {
				return nil, nil, fmt.Errorf("token types of type %d", et)
			}
			n := r.u64()
			for j := uint64(0); j < n && r.err == nil; j++ {
				types = append(types, int32(r.u32()))
			}
		default:
			r.skip(typ)
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	if tokens == nil || len(tokens) != len(types) {
		return nil, nil, fmt.Errorf("%s: no tokenizer.ggml.tokens and token_type of one length", path)
	}
	return tokens, types, nil
}

type ggufReader struct {
	r   *bufio.Reader
	err error
}

func (g *ggufReader) n(k uint64) []byte {
	if g.err != nil {
		return nil
	}
	b := make([]byte, k)
	_, g.err = io.ReadFull(g.r, b)
	return b
}

func (g *ggufReader) u32() uint32 {
	b := g.n(4)
	if g.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (g *ggufReader) u64() uint64 {
	b := g.n(8)
	if g.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (g *ggufReader) str() string { return string(g.n(g.u64())) }

// skip passes over one value of type typ.
func (g *ggufReader) skip(typ uint32) {
	sizes := map[uint32]uint64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch {
	case typ == 8:
		g.str()
	case typ == 9:
		et, n := g.u32(), g.u64()
		for i := uint64(0); i < n && g.err == nil; i++ {
			g.skip(et)
		}
	case sizes[typ] > 0:
		g.n(sizes[typ])
	default:
		if g.err == nil {
			g.err = fmt.Errorf("GGUF value type %d", typ)
		}
	}
}
