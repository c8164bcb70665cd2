package tinymodel

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Token types, as llama.cpp numbers them (tokenizer.ggml.token_type).
const (
	tokNormal      int32 = 1
	tokControl     int32 = 3
	tokUserDefined int32 = 4
)

// qwen25Added are Qwen2.5's added tokens, as its tokenizer_config.json lists
// them: "special": true becomes a control token and false a user-defined
// one, as llama.cpp's converter does. The tree's Qwen2 vocab has
// placeholders ([PAD151646] ...) in these slots; a real Qwen2.5 GGUF has
// these tokens, and llama-server's tool-call parser and loopd's neutraliser
// look for <tool_call> as a token.
var qwen25Added = []struct {
	id   int
	text string
	typ  int32
}{
	{151646, "<|object_ref_start|>", tokControl}, {151647, "<|object_ref_end|>", tokControl},
	{151648, "<|box_start|>", tokControl}, {151649, "<|box_end|>", tokControl},
	{151650, "<|quad_start|>", tokControl}, {151651, "<|quad_end|>", tokControl},
	{151652, "<|vision_start|>", tokControl}, {151653, "<|vision_end|>", tokControl},
	{151654, "<|vision_pad|>", tokControl}, {151655, "<|image_pad|>", tokControl},
	{151656, "<|video_pad|>", tokControl},
	{151657, "<tool_call>", tokUserDefined}, {151658, "</tool_call>", tokUserDefined},
	{151659, "<|fim_prefix|>", tokUserDefined}, {151660, "<|fim_middle|>", tokUserDefined},
	{151661, "<|fim_suffix|>", tokUserDefined}, {151662, "<|fim_pad|>", tokUserDefined},
	{151663, "<|repo_name|>", tokUserDefined}, {151664, "<|file_sep|>", tokUserDefined},
}

// vocab is the tokenizer a model gets: every tokenizer.* key of the vocab
// file, in its order, with the changes a Qwen2.5-Instruct GGUF has. It is
// shared by every model made from the same file in a process, and never
// changed once loaded.
type vocab struct {
	kvs    []KV
	tokens []string
	types  []int32
	id     map[string]int
	eos    int // <|im_end|>: the end of a turn ends the text

	normalOnce sync.Once
	normal     map[string]int // normal tokens by text, made by normalTokens
	maxLen     int
}

// vocabs caches the loaded vocabularies: tests make many models in one
// process, and parsing the 6 MB file is a good part of making one.
var vocabs struct {
	sync.Mutex
	m map[vocabKey]*vocab
}

type vocabKey struct {
	path  string
	size  int64
	mtime time.Time
}

func loadVocab(path string) (*vocab, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tinymodel: %w", err)
	}
	key := vocabKey{path, fi.Size(), fi.ModTime()}
	vocabs.Lock()
	defer vocabs.Unlock()
	if v, ok := vocabs.m[key]; ok {
		return v, nil
	}
	v, err := readVocab(path)
	if err != nil {
		return nil, err
	}
	if vocabs.m == nil {
		vocabs.m = map[vocabKey]*vocab{}
	}
	vocabs.m[key] = v
	return v, nil
}

func readVocab(path string) (*vocab, error) {
	f, err := ReadGGUFFile(path)
	if err != nil {
		return nil, err
	}
	v := &vocab{}
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			v.kvs = append(v.kvs, kv)
		}
	}
	toks, _ := v.get("tokenizer.ggml.tokens").Value.([]string)
	types, _ := v.get("tokenizer.ggml.token_type").Value.([]int32)
	if len(toks) == 0 || len(types) != len(toks) {
		return nil, fmt.Errorf("tinymodel: %s has no tokenizer.ggml.tokens with a token_type each", path)
	}
	// Own copies: the changes below must not reach the file's values.
	v.tokens = append([]string(nil), toks...)
	v.types = append([]int32(nil), types...)
	pre, _ := v.get("tokenizer.ggml.pre").Value.(string)
	if strings.HasPrefix(pre, "qwen") && len(v.tokens) > 151664 {
		for _, a := range qwen25Added {
			switch v.tokens[a.id] {
			case fmt.Sprintf("[PAD%d]", a.id):
				v.tokens[a.id], v.types[a.id] = a.text, a.typ
			case a.text:
			default:
				return nil, fmt.Errorf("tinymodel: token %d of %s is %q, neither a placeholder nor %q", a.id, path, v.tokens[a.id], a.text)
			}
		}
	}
	v.id = make(map[string]int, len(v.tokens))
	for i, t := range v.tokens {
		if _, dup := v.id[t]; !dup {
			v.id[t] = i
		}
	}
	imEnd, ok := v.id["<|im_end|>"]
	if !ok {
		return nil, fmt.Errorf("tinymodel: %s has no <|im_end|> token (a ChatML vocabulary is needed)", path)
	}
	v.eos = imEnd
	v.set("tokenizer.ggml.tokens", TypeArray, TypeString, v.tokens)
	v.set("tokenizer.ggml.token_type", TypeArray, TypeInt32, v.types)
	// As in Qwen2.5-Instruct's GGUFs: <|im_end|> ends the text, no BOS is
	// added, <|endoftext|> is the BOS and padding id.
	v.set("tokenizer.ggml.eos_token_id", TypeUint32, 0, uint32(imEnd))
	if eot, ok := v.id["<|endoftext|>"]; ok {
		v.set("tokenizer.ggml.bos_token_id", TypeUint32, 0, uint32(eot))
		v.set("tokenizer.ggml.padding_token_id", TypeUint32, 0, uint32(eot))
	}
	v.set("tokenizer.ggml.add_bos_token", TypeBool, 0, false)
	return v, nil
}

func (v *vocab) get(key string) KV {
	for _, kv := range v.kvs {
		if kv.Key == key {
			return kv
		}
	}
	return KV{}
}

// set replaces a key's value in place, or appends the key (while loading).
func (v *vocab) set(key string, t, elem ValueType, val any) {
	v.kvs = setKV(v.kvs, KV{Key: key, Type: t, Elem: elem, Value: val})
}

// setKV replaces the entry with kv's key in place, or appends kv.
func setKV(kvs []KV, kv KV) []KV {
	for i := range kvs {
		if kvs[i].Key == kv.Key {
			kvs[i] = kv
			return kvs
		}
	}
	return append(kvs, kv)
}

// byteLevel maps text to a byte-level BPE vocabulary's symbols (GPT-2's
// bytes_to_unicode): printable Latin-1 bytes stand for themselves, the
// others for the code points from U+0100 on, in byte order.
func byteLevel(text string) string {
	var sb strings.Builder
	for i := 0; i < len(text); i++ {
		sb.WriteRune(byteRune[text[i]])
	}
	return sb.String()
}

var byteRune = func() (m [256]rune) {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			m[b] = rune(b)
		} else {
			m[b] = 256 + n
			n++
		}
	}
	return m
}()

// unByteLevel is byteLevel's inverse, for printing a token's text.
func unByteLevel(sym string) string {
	var out []byte
	for _, r := range sym {
		b, ok := runeByte[r]
		if !ok {
			return sym
		}
		out = append(out, b)
	}
	return string(out)
}

var runeByte = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, r := range byteRune {
		m[r] = byte(b)
	}
	return m
}()
