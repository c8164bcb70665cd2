package tinymodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// tensor is one tensor to write: dims in GGUF order (columns first), data
// already encoded as F32 or F16, little-endian.
type tensor struct {
	name string
	dims []uint64
	typ  uint32
	data []byte
}

type encoder struct {
	w   *bufio.Writer
	n   uint64 // bytes written so far
	err error
	buf [8]byte
}

func (e *encoder) bytes(p []byte) {
	if e.err != nil {
		return
	}
	var k int
	k, e.err = e.w.Write(p)
	e.n += uint64(k)
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err != nil {
		return
	}
	var k int
	k, e.err = e.w.WriteString(s)
	e.n += uint64(k)
}

func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf(format, args...)
	}
}

// scalar writes one fixed-size value or a string of type t.
func (e *encoder) scalar(t ValueType, v any) {
	le := binary.LittleEndian
	ok := true
	switch t {
	case TypeUint8:
		var x uint8
		x, ok = v.(uint8)
		e.bytes([]byte{x})
	case TypeInt8:
		var x int8
		x, ok = v.(int8)
		e.bytes([]byte{byte(x)})
	case TypeBool:
		var x bool
		x, ok = v.(bool)
		b := byte(0)
		if x {
			b = 1
		}
		e.bytes([]byte{b})
	case TypeUint16:
		var x uint16
		x, ok = v.(uint16)
		e.bytes(le.AppendUint16(nil, x))
	case TypeInt16:
		var x int16
		x, ok = v.(int16)
		e.bytes(le.AppendUint16(nil, uint16(x)))
	case TypeUint32:
		var x uint32
		x, ok = v.(uint32)
		e.u32(x)
	case TypeInt32:
		var x int32
		x, ok = v.(int32)
		e.u32(uint32(x))
	case TypeFloat32:
		var x float32
		x, ok = v.(float32)
		e.u32(math.Float32bits(x))
	case TypeUint64:
		var x uint64
		x, ok = v.(uint64)
		e.u64(x)
	case TypeInt64:
		var x int64
		x, ok = v.(int64)
		e.u64(uint64(x))
	case TypeFloat64:
		var x float64
		x, ok = v.(float64)
		e.u64(math.Float64bits(x))
	case TypeString:
		var x string
		x, ok = v.(string)
		e.str(x)
	default:
		e.fail("cannot write value type %d", t)
	}
	if !ok {
		e.fail("value %T does not have type %d", v, t)
	}
}

// eachOf writes every element of a typed slice.
func eachOf[T any](e *encoder, t ValueType, v any) {
	s, ok := v.([]T)
	if !ok {
		e.fail("array %T does not hold type %d", v, t)
		return
	}
	e.u32(uint32(t))
	e.u64(uint64(len(s)))
	// The two long arrays of a vocabulary (151936 each) without boxing
	// every element.
	switch a := any(s).(type) {
	case []string:
		for _, x := range a {
			e.str(x)
		}
	case []int32:
		for _, x := range a {
			e.u32(uint32(x))
		}
	default:
		for _, x := range s {
			e.scalar(t, x)
		}
	}
}

func (e *encoder) kv(kv KV) {
	e.str(kv.Key)
	e.u32(uint32(kv.Type))
	if kv.Type != TypeArray {
		e.scalar(kv.Type, kv.Value)
		return
	}
	switch kv.Elem {
	case TypeUint8:
		eachOf[uint8](e, kv.Elem, kv.Value)
	case TypeInt8:
		eachOf[int8](e, kv.Elem, kv.Value)
	case TypeBool:
		eachOf[bool](e, kv.Elem, kv.Value)
	case TypeUint16:
		eachOf[uint16](e, kv.Elem, kv.Value)
	case TypeInt16:
		eachOf[int16](e, kv.Elem, kv.Value)
	case TypeUint32:
		eachOf[uint32](e, kv.Elem, kv.Value)
	case TypeInt32:
		eachOf[int32](e, kv.Elem, kv.Value)
	case TypeFloat32:
		eachOf[float32](e, kv.Elem, kv.Value)
	case TypeUint64:
		eachOf[uint64](e, kv.Elem, kv.Value)
	case TypeInt64:
		eachOf[int64](e, kv.Elem, kv.Value)
	case TypeFloat64:
		eachOf[float64](e, kv.Elem, kv.Value)
	case TypeString:
		eachOf[string](e, kv.Elem, kv.Value)
	default:
		e.fail("key %q: cannot write an array of type %d", kv.Key, kv.Elem)
	}
}

func (e *encoder) pad(alignment uint64) {
	if r := e.n % alignment; r != 0 {
		e.bytes(make([]byte, alignment-r))
	}
}

// encodeGGUF writes a version 3 GGUF file with the default alignment.
func encodeGGUF(w io.Writer, kvs []KV, tensors []tensor) error {
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.bytes([]byte(ggufMagic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.kv(kv)
	}
	var off uint64
	for _, t := range tensors {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(d)
		}
		e.u32(t.typ)
		e.u64(off)
		if size, _ := tensorBytes(TensorInfo{Dims: t.dims, Type: t.typ}); size != uint64(len(t.data)) {
			e.fail("tensor %s: %d bytes of data for %d", t.name, len(t.data), size)
		}
		off = alignUp(off+uint64(len(t.data)), defaultAlignment)
	}
	e.pad(defaultAlignment)
	for _, t := range tensors {
		e.bytes(t.data)
		e.pad(defaultAlignment)
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// writeFileAtomic writes the file beside path and renames it into place,
// so a reader (a llama-server loading it, another setup run) sees the old
// file or the whole new one, never a part.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		// Best effort: the file is complete either way; the directory
		// sync only makes the rename survive a crash.
		_ = d.Sync()
		d.Close()
	}
	return nil
}
