// Package wire holds boxmaker's shared data types, the frame codec and the
// strict JSON rules every role speaks. It holds no policy and performs no I/O
// except reading and writing frames on a stream the caller supplies.
//
// The byte-exact fixtures in fixtures/wire are the wire specification: every
// type here encodes to exactly those bytes, and decoding accepts only the
// canonical encoding (see docs/decisions.md, "Strict JSON").
package wire
