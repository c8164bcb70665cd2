package tinymodel

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// sampleKVs holds one key of every value type and an array of each.
func sampleKVs() []KV {
	return []KV{
		{Key: "u8", Type: TypeUint8, Value: uint8(200)},
		{Key: "i8", Type: TypeInt8, Value: int8(-5)},
		{Key: "u16", Type: TypeUint16, Value: uint16(60000)},
		{Key: "i16", Type: TypeInt16, Value: int16(-30000)},
		{Key: "u32", Type: TypeUint32, Value: uint32(4000000000)},
		{Key: "i32", Type: TypeInt32, Value: int32(-2000000000)},
		{Key: "f32", Type: TypeFloat32, Value: float32(1e6)},
		{Key: "bool", Type: TypeBool, Value: true},
		{Key: "str", Type: TypeString, Value: "héllo <|im_end|>"},
		{Key: "u64", Type: TypeUint64, Value: uint64(1) << 63},
		{Key: "i64", Type: TypeInt64, Value: int64(-1) << 62},
		{Key: "f64", Type: TypeFloat64, Value: math.Pi},
		{Key: "a.str", Type: TypeArray, Elem: TypeString, Value: []string{"a", "", "Ġb"}},
		{Key: "a.i32", Type: TypeArray, Elem: TypeInt32, Value: []int32{1, -3, 4}},
		{Key: "a.u32", Type: TypeArray, Elem: TypeUint32, Value: []uint32{7}},
		{Key: "a.f32", Type: TypeArray, Elem: TypeFloat32, Value: []float32{0.5, -2}},
		{Key: "a.bool", Type: TypeArray, Elem: TypeBool, Value: []bool{true, false}},
		{Key: "a.u8", Type: TypeArray, Elem: TypeUint8, Value: []uint8{}},
		{Key: "a.i8", Type: TypeArray, Elem: TypeInt8, Value: []int8{-1}},
		{Key: "a.u16", Type: TypeArray, Elem: TypeUint16, Value: []uint16{9}},
		{Key: "a.i16", Type: TypeArray, Elem: TypeInt16, Value: []int16{-9}},
		{Key: "a.u64", Type: TypeArray, Elem: TypeUint64, Value: []uint64{1 << 40}},
		{Key: "a.i64", Type: TypeArray, Elem: TypeInt64, Value: []int64{-1 << 40}},
		{Key: "a.f64", Type: TypeArray, Elem: TypeFloat64, Value: []float64{1.25}},
	}
}

func sampleTensors() []tensor {
	m := newMat(3, 5, true)
	k := 0
	m.fill(func() float32 { k++; return float32(k) / 4 })
	v := newMat(0, 7, false)
	v.fill(func() float32 { k++; return -float32(k) })
	return []tensor{m.tensor("m.weight"), v.tensor("v.bias")}
}

func encodeSample(t testing.TB) []byte {
	var buf bytes.Buffer
	if err := encodeGGUF(&buf, sampleKVs(), sampleTensors()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGGUFRoundTrip(t *testing.T) {
	b := encodeSample(t)
	f, err := ReadGGUF(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataStart%32 != 0 {
		t.Errorf("version %d alignment %d data start %d", f.Version, f.Alignment, f.DataStart)
	}
	if !reflect.DeepEqual(f.KVs, sampleKVs()) {
		t.Errorf("key/values differ:\n got %#v\nwant %#v", f.KVs, sampleKVs())
	}
	want := sampleTensors()
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for i, ti := range f.Tensors {
		w := want[i]
		if ti.Name != w.name || !reflect.DeepEqual(ti.Dims, w.dims) || ti.Type != w.typ || ti.Offset%32 != 0 {
			t.Errorf("tensor %d: %+v, want %s %v type %d", i, ti, w.name, w.dims, w.typ)
		}
		start := f.DataStart + ti.Offset
		if got := b[start : start+uint64(len(w.data))]; !bytes.Equal(got, w.data) {
			t.Errorf("tensor %s: data differs", w.name)
		}
	}
	// The matrix is F16, GGUF dims (cols, rows), row-major: entry (2, 4)
	// is element 14, the 15th value, 15/4.
	m := f.Tensors[0]
	off := f.DataStart + m.Offset + 2*14
	if got := f16float(binary.LittleEndian.Uint16(b[off:])); got != 3.75 {
		t.Errorf("m[2][4] = %v, want 3.75", got)
	}
	if kv, ok := f.Get("a.str"); !ok || kv.Value.([]string)[2] != "Ġb" {
		t.Errorf("Get(a.str) = %+v, %v", kv, ok)
	}
	if _, ok := f.Get("missing"); ok {
		t.Error("Get found a missing key")
	}
}

func TestGGUFWriterRefusesMismatch(t *testing.T) {
	var buf bytes.Buffer
	for _, kvs := range [][]KV{
		{{Key: "x", Type: TypeUint32, Value: 5}}, // an int, not a uint32
		{{Key: "x", Type: TypeArray, Elem: TypeString, Value: []int32{1}}},
		{{Key: "x", Type: TypeArray, Elem: TypeArray, Value: []string{}}},
	} {
		if err := encodeGGUF(&buf, kvs, nil); err == nil {
			t.Errorf("%+v written without an error", kvs)
		}
	}
	bad := tensor{name: "t", dims: []uint64{4}, typ: ggmlF32, data: make([]byte, 8)}
	if err := encodeGGUF(&buf, nil, []tensor{bad}); err == nil {
		t.Error("a tensor with too little data was written")
	}
}

// patch returns a copy of b with p written at off.
func patch(b []byte, off int, p []byte) []byte {
	c := bytes.Clone(b)
	copy(c[off:], p)
	return c
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// oneKey is a file with no tensor and one key "a" of type t, its value
// encoded as the parts given.
func oneKey(t ValueType, parts ...[]byte) []byte {
	b := []byte("GGUF")
	b = append(b, le32(3)...)
	b = append(b, le64(0)...)
	b = append(b, le64(1)...)
	b = append(b, le64(1)...)
	b = append(b, 'a')
	b = append(b, le32(uint32(t))...)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestReadGGUFRejects(t *testing.T) {
	good := encodeSample(t)
	encode := func(kvs ...KV) []byte {
		var buf bytes.Buffer
		if err := encodeGGUF(&buf, kvs, nil); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	flag := KV{Key: "k", Type: TypeBool, Value: true}
	align := func(a uint32) []byte {
		return encode(KV{Key: "general.alignment", Type: TypeUint32, Value: a})
	}
	// The header is 24 bytes; the first key's length is at 24, its type
	// at 34 ("u8" is 2 bytes).
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"empty":           {nil, "magic"},
		"magic":           {patch(good, 0, []byte("GGML")), "magic"},
		"version 1":       {patch(good, 4, le32(1)), "version 1"},
		"truncated":       {good[:len(good)-5], "past the end"}, // the last 4 are padding
		"in the header":   {good[:20], "truncated"},
		"many keys":       {patch(good, 16, le64(1<<60)), "key/values"},
		"many tensors":    {patch(good, 8, le64(1<<60)), "tensors"},
		"long key":        {patch(good, 24, le64(1<<62)), "truncated"},
		"unknown type":    {patch(good, 34, le32(99)), "unknown value type"},
		"bool 2":          {oneKey(TypeBool, []byte{2}, make([]byte, 16)), "bool value 2"},
		"bool array 2":    {oneKey(TypeArray, le32(uint32(TypeBool)), le64(1), []byte{2}, make([]byte, 16)), "bool value 2"},
		"array of arrays": {oneKey(TypeArray, le32(uint32(TypeArray)), le64(1), make([]byte, 16)), "arrays of arrays"},
		"array type 99":   {oneKey(TypeArray, le32(99), le64(1), make([]byte, 16)), "unknown type 99"},
		"duplicate":       {encode(flag, flag), "duplicate key"},
		"alignment 0":     {align(0), "power of two"},
		"alignment 3":     {align(3), "power of two"},
		"alignment u64":   {encode(KV{Key: "general.alignment", Type: TypeUint64, Value: uint64(32)}), "power of two"},
	}
	for name, c := range cases {
		if _, err := ReadGGUF(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

// A file that claims huge counts must be refused before anything of that
// size is allocated.
func TestReadGGUFBoundsAllocation(t *testing.T) {
	for name, b := range map[string][]byte{
		"strings": oneKey(TypeArray, le32(uint32(TypeString)), le64(1<<40), make([]byte, 64)),
		"int64s":  oneKey(TypeArray, le32(uint32(TypeInt64)), le64(1<<40), make([]byte, 64)),
		"string":  oneKey(TypeString, le64(1<<40), make([]byte, 64)),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadGGUF(b)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: a trillion of them in 100 bytes was accepted", name)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: refusing it allocated %d bytes", name, grew)
		}
	}
}

func FuzzReadGGUF(f *testing.F) {
	f.Add(encodeSample(f))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	var buf bytes.Buffer
	if err := encodeGGUF(&buf, []KV{{Key: "general.alignment", Type: TypeUint32, Value: uint32(64)}}, sampleTensors()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ReadGGUF(b)
		if err != nil {
			return
		}
		// What is accepted is consistent: every count fits the size, and
		// every tensor of a known type lies inside the file.
		if uint64(len(g.KVs))*13 > uint64(len(b)) || uint64(len(g.Tensors))*24 > uint64(len(b)) {
			t.Fatalf("%d keys and %d tensors in %d bytes", len(g.KVs), len(g.Tensors), len(b))
		}
		for _, ti := range g.Tensors {
			if size, known := tensorBytes(ti); known && g.DataStart+ti.Offset+size > uint64(len(b)) {
				t.Fatalf("tensor %q past the end", ti.Name)
			}
		}
	})
}
