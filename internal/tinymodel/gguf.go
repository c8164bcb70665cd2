package tinymodel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
)

// The GGUF container, version 2 and 3 (little-endian): a header, metadata
// key/values, tensor descriptions, then the tensor data, aligned. The reader
// is here to copy a vocab-only file's tokenizer keys; it reads the whole file
// into memory (the Qwen2 vocab is 6 MB) and checks every count and length
// against what is left of it before allocating, so no input makes it
// allocate more than a small multiple of the file's size.

// ValueType is a GGUF metadata value type.
type ValueType uint32

// The metadata value types, as GGUF numbers them.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

// ggml tensor types the writer uses (the reader accepts any number).
const (
	ggmlF32 uint32 = 0
	ggmlF16 uint32 = 1
)

const (
	ggufMagic        = "GGUF"
	defaultAlignment = 32
	maxDims          = 4 // GGML_MAX_DIMS
)

// KV is one metadata key and its value. Value's Go type follows Type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64 or float64; for TypeArray it is a slice of Elem's Go type
// ([]string, []int32, ...). Arrays of arrays are not supported: no
// tokenizer uses them.
type KV struct {
	Key   string
	Type  ValueType
	Elem  ValueType
	Value any
}

// TensorInfo describes one tensor: Dims in GGUF order (the fastest-varying
// first), Type a ggml type number, Offset from the start of the data.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   uint32
	Offset uint64
}

// File is a parsed GGUF file.
type File struct {
	Version   uint32
	KVs       []KV
	Tensors   []TensorInfo
	Alignment uint64
	// DataStart is where the tensor data begins in the file.
	DataStart uint64
}

// Get returns the key's entry.
func (f *File) Get(key string) (KV, bool) {
	for _, kv := range f.KVs {
		if kv.Key == key {
			return kv, true
		}
	}
	return KV{}, false
}

// ReadGGUFFile reads and parses a GGUF file.
func ReadGGUFFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tinymodel: %w", err)
	}
	f, err := ReadGGUF(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return f, nil
}

var errShort = errors.New("truncated")

type reader struct {
	b   []byte
	pos uint64
}

func (r *reader) left() uint64 { return uint64(len(r.b)) - r.pos }

func (r *reader) take(n uint64) ([]byte, error) {
	if n > r.left() {
		return nil, errShort
	}
	p := r.b[r.pos : r.pos+n]
	r.pos += n
	return p, nil
}

func (r *reader) u32() (uint32, error) {
	p, err := r.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p), nil
}

func (r *reader) u64() (uint64, error) {
	p, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p), nil
}

func (r *reader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	p, err := r.take(n)
	if err != nil {
		return "", err
	}
	return string(p), nil
}

// scalarSize is the encoded size of a fixed-size type, 0 for the others.
func scalarSize(t ValueType) uint64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// scalar decodes one fixed-size value from p (len(p) == scalarSize(t)).
func scalar(t ValueType, p []byte) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return p[0], nil
	case TypeInt8:
		return int8(p[0]), nil
	case TypeBool:
		if p[0] > 1 {
			return nil, fmt.Errorf("bool value %d", p[0])
		}
		return p[0] == 1, nil
	case TypeUint16:
		return le.Uint16(p), nil
	case TypeInt16:
		return int16(le.Uint16(p)), nil
	case TypeUint32:
		return le.Uint32(p), nil
	case TypeInt32:
		return int32(le.Uint32(p)), nil
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(p)), nil
	case TypeUint64:
		return le.Uint64(p), nil
	case TypeInt64:
		return int64(le.Uint64(p)), nil
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(p)), nil
	}
	return nil, fmt.Errorf("value type %d", t)
}

// typedArray decodes n fixed-size values into a slice of their Go type.
func typedArray[T any](r *reader, t ValueType, n uint64) ([]T, error) {
	size := scalarSize(t)
	if n > r.left()/size {
		return nil, errShort
	}
	out := make([]T, n)
	for i := range out {
		p, _ := r.take(size)
		v, err := scalar(t, p)
		if err != nil {
			return nil, err
		}
		out[i] = v.(T)
	}
	return out, nil
}

func (r *reader) array() (ValueType, any, error) {
	e, err := r.u32()
	if err != nil {
		return 0, nil, err
	}
	elem := ValueType(e)
	n, err := r.u64()
	if err != nil {
		return 0, nil, err
	}
	var v any
	switch elem {
	case TypeString:
		// Each string takes at least its 8-byte length.
		if n > r.left()/8 {
			return 0, nil, errShort
		}
		s := make([]string, n)
		for i := range s {
			if s[i], err = r.str(); err != nil {
				return 0, nil, err
			}
		}
		v = s
	case TypeUint8:
		v, err = typedArray[uint8](r, elem, n)
	case TypeInt8:
		v, err = typedArray[int8](r, elem, n)
	case TypeBool:
		v, err = typedArray[bool](r, elem, n)
	case TypeUint16:
		v, err = typedArray[uint16](r, elem, n)
	case TypeInt16:
		v, err = typedArray[int16](r, elem, n)
	case TypeUint32:
		v, err = typedArray[uint32](r, elem, n)
	case TypeInt32: // a vocabulary's token types: decoded without boxing each
		if n > r.left()/4 {
			return 0, nil, errShort
		}
		a := make([]int32, n)
		for i := range a {
			p, _ := r.take(4)
			a[i] = int32(binary.LittleEndian.Uint32(p))
		}
		v = a
	case TypeFloat32:
		v, err = typedArray[float32](r, elem, n)
	case TypeUint64:
		v, err = typedArray[uint64](r, elem, n)
	case TypeInt64:
		v, err = typedArray[int64](r, elem, n)
	case TypeFloat64:
		v, err = typedArray[float64](r, elem, n)
	case TypeArray:
		return 0, nil, errors.New("arrays of arrays are not supported")
	default:
		return 0, nil, fmt.Errorf("array of unknown type %d", elem)
	}
	return elem, v, err
}

func (r *reader) value(t ValueType) (ValueType, any, error) {
	switch t {
	case TypeString:
		s, err := r.str()
		return 0, s, err
	case TypeArray:
		return r.array()
	}
	size := scalarSize(t)
	if size == 0 {
		return 0, nil, fmt.Errorf("unknown value type %d", t)
	}
	p, err := r.take(size)
	if err != nil {
		return 0, nil, err
	}
	v, err := scalar(t, p)
	return 0, v, err
}

// ReadGGUF parses a GGUF file held in b. It checks the structure (counts,
// lengths, types, no duplicate key, tensors inside the file for the F32 and
// F16 types) and keeps every value; tensor data stays in b.
func ReadGGUF(b []byte) (*File, error) {
	f, err := readGGUF(b)
	if err != nil {
		return nil, fmt.Errorf("tinymodel: not a valid GGUF file: %w", err)
	}
	return f, nil
}

func readGGUF(b []byte) (*File, error) {
	r := &reader{b: b}
	magic, err := r.take(4)
	if err != nil || string(magic) != ggufMagic {
		return nil, errors.New("no GGUF magic")
	}
	f := &File{Alignment: defaultAlignment}
	if f.Version, err = r.u32(); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("version %d (2 and 3 are supported)", f.Version)
	}
	nt, err := r.u64()
	if err != nil {
		return nil, err
	}
	nkv, err := r.u64()
	if err != nil {
		return nil, err
	}
	// A key/value takes at least 13 bytes (key length, type, one byte), a
	// tensor description at least 24 (name length, dims count, type, offset).
	if nkv > r.left()/13 {
		return nil, fmt.Errorf("%d key/values: %w", nkv, errShort)
	}
	f.KVs = make([]KV, 0, nkv)
	seen := make(map[string]bool, nkv)
	for range nkv {
		var kv KV
		if kv.Key, err = r.str(); err != nil {
			return nil, err
		}
		if seen[kv.Key] {
			return nil, fmt.Errorf("duplicate key %q", kv.Key)
		}
		seen[kv.Key] = true
		t, err := r.u32()
		if err != nil {
			return nil, err
		}
		kv.Type = ValueType(t)
		if kv.Elem, kv.Value, err = r.value(kv.Type); err != nil {
			return nil, fmt.Errorf("key %q: %w", kv.Key, err)
		}
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return nil, fmt.Errorf("general.alignment %v is not a power of two (uint32)", kv.Value)
			}
			f.Alignment = uint64(a)
		}
		f.KVs = append(f.KVs, kv)
	}
	if nt > r.left()/24 {
		return nil, fmt.Errorf("%d tensors: %w", nt, errShort)
	}
	f.Tensors = make([]TensorInfo, 0, nt)
	for range nt {
		ti, err := r.tensorInfo(f.Alignment)
		if err != nil {
			return nil, err
		}
		f.Tensors = append(f.Tensors, ti)
	}
	f.DataStart = alignUp(r.pos, f.Alignment)
	for _, ti := range f.Tensors {
		size, known := tensorBytes(ti)
		if !known {
			continue
		}
		end, carry := bits.Add64(f.DataStart, ti.Offset, 0)
		end, carry2 := bits.Add64(end, size, 0)
		if carry != 0 || carry2 != 0 || end > uint64(len(b)) {
			return nil, fmt.Errorf("tensor %q runs past the end of the file", ti.Name)
		}
	}
	return f, nil
}

func (r *reader) tensorInfo(alignment uint64) (TensorInfo, error) {
	var ti TensorInfo
	var err error
	if ti.Name, err = r.str(); err != nil {
		return ti, err
	}
	nd, err := r.u32()
	if err != nil {
		return ti, err
	}
	if nd == 0 || nd > maxDims {
		return ti, fmt.Errorf("tensor %q has %d dimensions", ti.Name, nd)
	}
	ti.Dims = make([]uint64, nd)
	for i := range ti.Dims {
		if ti.Dims[i], err = r.u64(); err != nil {
			return ti, err
		}
	}
	if ti.Type, err = r.u32(); err != nil {
		return ti, err
	}
	if ti.Offset, err = r.u64(); err != nil {
		return ti, err
	}
	if ti.Offset%alignment != 0 {
		return ti, fmt.Errorf("tensor %q offset %d is not aligned to %d", ti.Name, ti.Offset, alignment)
	}
	return ti, nil
}

// tensorBytes is the size of a tensor's data for the types the writer
// uses; known is false for the others, whose data the reader leaves alone.
func tensorBytes(ti TensorInfo) (size uint64, known bool) {
	var elem uint64
	switch ti.Type {
	case ggmlF32:
		elem = 4
	case ggmlF16:
		elem = 2
	default:
		return 0, false
	}
	size = elem
	for _, d := range ti.Dims {
		hi, lo := bits.Mul64(size, d)
		if hi != 0 {
			return math.MaxUint64, true
		}
		size = lo
	}
	return size, true
}

func alignUp(n, a uint64) uint64 {
	if r := n % a; r != 0 {
		return n + a - r
	}
	return n
}
