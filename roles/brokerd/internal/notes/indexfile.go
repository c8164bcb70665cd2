package notes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"boxmaker/wire"
)

// The index file, <home>/index/notes.idx, is text, one record a line:
//
//	boxmaker-notes-index 1
//	sha256 <64 hex digits: SHA-256 of everything after this line>
//	note <id> <size> <mtime-ns> <written_at>     one per valid note, by id
//	damaged <id> <size> <mtime-ns>               one per damaged note file, by id
//	term <token> <n>:<title>:<text> ...          one per term, by token (bytes)
//
// n is the note's position among the note lines (0 first); title and text
// count the token's occurrences, not both zero; the pairs go by n. Numbers
// are decimal without leading zeros. The parser accepts exactly what
// encodeIndex writes, so decoding and re-encoding give the same bytes (the
// fuzz test checks it). The index holds no label, title or text: it ranks,
// and every note returned is read from its own file.
const indexMagic = "boxmaker-notes-index 1\n"

var errIndex = errors.New("notes: index damaged")

func encodeIndex(x *index) []byte {
	docs := make([]*doc, 0, len(x.byID))
	for _, d := range x.docs {
		if d != nil {
			docs = append(docs, d)
		}
	}
	slices.SortFunc(docs, func(a, b *doc) int { return strings.Compare(a.id, b.id) })
	pos := make([]uint32, len(x.docs)) // slot -> n
	npost := 0
	for _, p := range x.postings {
		npost += len(p)
	}
	// About 60 bytes a note line and 10 a posting, so the body is built
	// without growing (9 MiB at 10,000 notes).
	body := make([]byte, 0, 64*(len(docs)+len(x.damaged))+12*npost+24*len(x.terms))
	for n, d := range docs {
		pos[x.byID[d.id]] = uint32(n)
		body = append(body, "note "...)
		body = append(body, d.id...)
		body = appendStamp(body, d.st)
		body = append(body, ' ')
		body = append(body, d.written.String()...)
		body = append(body, '\n')
	}
	damaged := make([]string, 0, len(x.damaged))
	for id := range x.damaged {
		damaged = append(damaged, id)
	}
	slices.Sort(damaged)
	for _, id := range damaged {
		body = append(body, "damaged "...)
		body = append(body, id...)
		body = appendStamp(body, x.damaged[id])
		body = append(body, '\n')
	}
	tids := make([]uint32, 0, len(x.terms))
	for tid, p := range x.postings {
		if len(p) > 0 {
			tids = append(tids, uint32(tid))
		}
	}
	slices.SortFunc(tids, func(a, b uint32) int { return strings.Compare(x.terms[a], x.terms[b]) })
	for _, tid := range tids {
		body = append(body, "term "...)
		body = append(body, x.terms[tid]...)
		// Slots and positions are both in id order only after a
		// rebuild; in general n must be sorted here.
		p := x.postings[tid]
		if !slices.IsSortedFunc(p, func(a, b posting) int { return int(pos[a.doc]) - int(pos[b.doc]) }) {
			p = slices.Clone(p)
			slices.SortFunc(p, func(a, b posting) int { return int(pos[a.doc]) - int(pos[b.doc]) })
		}
		for _, e := range p {
			body = append(body, ' ')
			body = strconv.AppendUint(body, uint64(pos[e.doc]), 10)
			body = append(body, ':')
			body = strconv.AppendUint(body, uint64(e.title), 10)
			body = append(body, ':')
			body = strconv.AppendUint(body, uint64(e.text), 10)
		}
		body = append(body, '\n')
	}
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(indexMagic)+8+64+len(body))
	out = append(out, indexMagic...)
	out = append(out, "sha256 "...)
	out = hex.AppendEncode(out, sum[:])
	out = append(out, '\n')
	return append(out, body...)
}

func appendStamp(b []byte, st stamp) []byte {
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.size, 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, st.mtime, 10)
}

// parseIndex decodes an index file. Anything it does not accept, for
// whatever reason, means the index is rebuilt: the error says why, for
// tests; Open does not need it.
func parseIndex(b []byte) (*index, error) {
	rest, ok := bytes.CutPrefix(b, []byte(indexMagic))
	if !ok {
		return nil, fmt.Errorf("%w: not version 1", errIndex)
	}
	line, body, ok := bytes.Cut(rest, []byte{'\n'})
	hexSum, ok2 := bytes.CutPrefix(line, []byte("sha256 "))
	sum := sha256.Sum256(body)
	if !ok || !ok2 || string(hexSum) != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: checksum", errIndex)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		return nil, fmt.Errorf("%w: last line unterminated", errIndex)
	}
	x := newIndex()
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(body) == 0 {
		lines = nil
	}
	var prev string // the previous line's id or term, for the order checks
	section := 0    // 0 note, 1 damaged, 2 term
	for i, l := range lines {
		f := strings.Split(l, " ")
		bad := func(why string) error { return fmt.Errorf("%w: line %d: %s", errIndex, i+3, why) }
		var err error
		switch {
		case f[0] == "note" && section == 0 && len(f) == 5:
			err = x.parseNote(f[1:], prev)
		case f[0] == "damaged" && section <= 1 && len(f) == 4:
			if section == 0 {
				section, prev = 1, ""
			}
			err = x.parseDamaged(f[1:], prev)
		case f[0] == "term" && len(f) >= 3:
			if section < 2 {
				section, prev = 2, ""
			}
			err = x.parseTerm(f[1:], prev)
		default:
			err = errors.New("not a record in its place")
		}
		if err != nil {
			return nil, bad(err.Error())
		}
		prev = f[1]
	}
	return x, nil
}

func (x *index) parseNote(f []string, prev string) error {
	id := f[0]
	if !wire.ValidID(id) || id <= prev {
		return errors.New("note ids must be valid and in increasing order")
	}
	st, err := parseStamp(f[1], f[2])
	if err != nil {
		return err
	}
	ts, err := wire.ParseTimestamp(f[3])
	if err != nil {
		return err
	}
	x.byID[id] = uint32(len(x.docs))
	x.docs = append(x.docs, &doc{id: id, st: st, written: ts})
	return nil
}

func (x *index) parseDamaged(f []string, prev string) error {
	id := f[0]
	if _, dup := x.byID[id]; dup || !wire.ValidID(id) || id <= prev {
		return errors.New("damaged ids must be valid, in increasing order, and not notes")
	}
	st, err := parseStamp(f[1], f[2])
	if err != nil {
		return err
	}
	x.damaged[id] = st
	return nil
}

func (x *index) parseTerm(f []string, prev string) error {
	t := f[0]
	if !validToken(t) || t <= prev {
		return errors.New("terms must be tokens in increasing order")
	}
	tid := uint32(len(x.terms))
	p := make([]posting, 0, len(f)-1)
	for k, e := range f[1:] {
		ns, rest, ok1 := strings.Cut(e, ":")
		tis, txs, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return fmt.Errorf("posting %q is not n:title:text", e)
		}
		n, err1 := parseUint(ns, uint64(len(x.docs)-1))
		ti, err2 := parseUint(tis, MaxTitleBytes)
		tx, err3 := parseUint(txs, MaxTextBytes)
		if err := errors.Join(err1, err2, err3); err != nil || len(x.docs) == 0 {
			return fmt.Errorf("posting %q: out of range", e)
		}
		if ti+tx == 0 || k > 0 && uint32(n) <= p[k-1].doc {
			return fmt.Errorf("posting %q: empty, or not in increasing order", e)
		}
		p = append(p, posting{uint32(n), uint16(ti), uint16(tx)})
		x.docs[n].terms = append(x.docs[n].terms, tid)
	}
	x.vocab[t] = tid
	x.terms = append(x.terms, t)
	x.postings = append(x.postings, p)
	return nil
}

func parseStamp(size, mtime string) (stamp, error) {
	sz, err := parseUint(size, 1<<62)
	if err != nil {
		return stamp{}, err
	}
	neg := strings.HasPrefix(mtime, "-")
	mt, err := parseUint(strings.TrimPrefix(mtime, "-"), 1<<62)
	if err != nil || neg && mt == 0 {
		return stamp{}, errors.New("bad modification time")
	}
	st := stamp{int64(sz), int64(mt)}
	if neg {
		st.mtime = -st.mtime
	}
	return st, nil
}

// parseUint accepts decimal digits without a sign or a leading zero, up to max.
func parseUint(s string, max uint64) (uint64, error) {
	if s == "" || len(s) > 1 && s[0] == '0' || len(s) > 19 {
		return 0, fmt.Errorf("bad number %q", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad number %q", s)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > max {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return v, nil
}

// matches reports whether the index describes exactly the note files on
// disk: the same ids, each with the same size and modification time.
func (x *index) matches(files map[string]stamp) bool {
	if len(files) != len(x.byID)+len(x.damaged) {
		return false
	}
	for id, st := range files {
		if slot, ok := x.byID[id]; ok {
			if x.docs[slot].st != st {
				return false
			}
		} else if d, ok := x.damaged[id]; !ok || d != st {
			return false
		}
	}
	return true
}
