package policy

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"boxmaker/wire"
)

// Args are one call's parsed arguments: ReadFileArgs, WriteFileArgs,
// ShellArgs, HTTPFetchArgs, RememberArgs or RecallArgs. The set is closed:
// only this package implements it.
type Args interface {
	Tool() Tool
	isArgs()
}

// ReadFileArgs are read_file's arguments: {"path": "<abs>"}.
type ReadFileArgs struct{ Path string }

// WriteFileArgs are write_file's arguments: {"path": "<abs>", "content": "<text>"}.
type WriteFileArgs struct{ Path, Content string }

// ShellArgs are shell's arguments: {"command": "<text>", "cwd": "<abs>"};
// Cwd is nil when absent.
type ShellArgs struct {
	Command string
	Cwd     *string
}

// HTTPFetchArgs are http_fetch's arguments: {"url": "https://…"}. Host is the
// URL's host, as ParseURL found it.
type HTTPFetchArgs struct{ URL, Host string }

// RememberArgs are remember's arguments: {"title": "<text>", "text":
// "<text>", "id": "<note id>"}; ID is nil when absent (a new note), else
// the note it replaces.
type RememberArgs struct {
	Title, Text string
	ID          *string
}

// RecallArgs are recall's arguments: exactly one of {"query": "<words>"}
// (ID nil) and {"id": "<note id>"} (Query "").
type RecallArgs struct {
	Query string
	ID    *string
}

func (ReadFileArgs) Tool() Tool  { return ReadFile }
func (WriteFileArgs) Tool() Tool { return WriteFile }
func (ShellArgs) Tool() Tool     { return Shell }
func (HTTPFetchArgs) Tool() Tool { return HTTPFetch }
func (RememberArgs) Tool() Tool  { return Remember }
func (RecallArgs) Tool() Tool    { return Recall }

func (ReadFileArgs) isArgs()  {}
func (WriteFileArgs) isArgs() {}
func (ShellArgs) isArgs()     {}
func (HTTPFetchArgs) isArgs() {}
func (RememberArgs) isArgs()  {}
func (RecallArgs) isArgs()    {}

// The bounds of the memory tools' arguments, in bytes. A title is a line,
// a note a page or so; a query is a few words. Text may be empty (a note
// that is only its title).
const (
	MaxNoteTitle = 200
	MaxNoteText  = 16384
	MaxQuery     = 500
)

// argString is one string member. Its own unmarshaler refuses null, numbers
// and everything else but a JSON string, and records that the member was
// present, so a missing required member is told apart from "".
type argString struct {
	set bool
	v   string
}

func (s *argString) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '"' {
		return fmt.Errorf("must be a string, not %s", tok.Kind())
	}
	s.set, s.v = true, tok.String()
	return nil
}

// The wire shapes, one per tool. Unknown members are refused by the options
// below; names match case-sensitively and duplicates are refused by default
// in go-json-experiment/json.
type (
	readFileJSON struct {
		Path argString `json:"path"`
	}
	writeFileJSON struct {
		Path    argString `json:"path"`
		Content argString `json:"content"`
	}
	shellJSON struct {
		Command argString `json:"command"`
		Cwd     argString `json:"cwd"`
	}
	httpFetchJSON struct {
		URL argString `json:"url"`
	}
	rememberJSON struct {
		Title argString `json:"title"`
		Text  argString `json:"text"`
		ID    argString `json:"id"`
	}
	recallJSON struct {
		Query argString `json:"query"`
		ID    argString `json:"id"`
	}
)

var argOptions = json.JoinOptions(
	json.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// ParseArgs parses the model's JSON arguments for tool strictly and checks
// the form of every path and URL. Any error means invalid_arguments, and the
// Args are then nil.
func ParseArgs(tool Tool, raw string) (Args, error) {
	v := jsontext.Value(raw)
	if !v.IsValid() {
		return nil, errors.New("arguments are not one valid JSON value")
	}
	if v.Kind() != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	a, err := parseArgs(tool, v)
	if err != nil {
		return nil, err
	}
	return a, nil
}

func parseArgs(tool Tool, v jsontext.Value) (Args, error) {
	switch tool {
	case ReadFile:
		var a readFileJSON
		if err := decode(v, &a); err != nil {
			return nil, err
		}
		if err := need("path", a.Path); err != nil {
			return nil, err
		}
		return ReadFileArgs{a.Path.v}, checkArgPath("path", a.Path.v)
	case WriteFile:
		var a writeFileJSON
		if err := decode(v, &a); err != nil {
			return nil, err
		}
		if err := errors.Join(need("path", a.Path), need("content", a.Content)); err != nil {
			return nil, err
		}
		return WriteFileArgs{a.Path.v, a.Content.v}, checkArgPath("path", a.Path.v)
	case Shell:
		var a shellJSON
		if err := decode(v, &a); err != nil {
			return nil, err
		}
		if err := need("command", a.Command); err != nil {
			return nil, err
		}
		if !a.Cwd.set {
			return ShellArgs{Command: a.Command.v}, nil
		}
		cwd := a.Cwd.v
		return ShellArgs{a.Command.v, &cwd}, checkArgPath("cwd", cwd)
	case HTTPFetch:
		var a httpFetchJSON
		if err := decode(v, &a); err != nil {
			return nil, err
		}
		if err := need("url", a.URL); err != nil {
			return nil, err
		}
		host, err := ParseURL(a.URL.v)
		if err != nil {
			return nil, fmt.Errorf("url %w", err)
		}
		return HTTPFetchArgs{a.URL.v, host}, nil
	case Remember:
		return parseRemember(v)
	case Recall:
		return parseRecall(v)
	}
	return nil, fmt.Errorf("unknown tool %d", tool)
}

func parseRemember(v jsontext.Value) (Args, error) {
	var a rememberJSON
	if err := decode(v, &a); err != nil {
		return nil, err
	}
	if err := errors.Join(need("title", a.Title), need("text", a.Text)); err != nil {
		return nil, err
	}
	err := errors.Join(bounded("title", a.Title.v, 1, MaxNoteTitle), bounded("text", a.Text.v, 0, MaxNoteText))
	if err != nil {
		return nil, err
	}
	r := RememberArgs{Title: a.Title.v, Text: a.Text.v}
	if a.ID.set {
		if err := checkNoteID(a.ID.v); err != nil {
			return nil, err
		}
		id := a.ID.v
		r.ID = &id
	}
	return r, nil
}

func parseRecall(v jsontext.Value) (Args, error) {
	var a recallJSON
	if err := decode(v, &a); err != nil {
		return nil, err
	}
	switch {
	case a.Query.set && a.ID.set, !a.Query.set && !a.ID.set:
		return nil, errors.New(`exactly one of "query" and "id" is required`)
	case a.ID.set:
		if err := checkNoteID(a.ID.v); err != nil {
			return nil, err
		}
		id := a.ID.v
		return RecallArgs{ID: &id}, nil
	}
	if err := bounded("query", a.Query.v, 1, MaxQuery); err != nil {
		return nil, err
	}
	return RecallArgs{Query: a.Query.v}, nil
}

// bounded checks that s is lo to hi bytes long.
func bounded(name, s string, lo, hi int) error {
	if len(s) < lo || len(s) > hi {
		return fmt.Errorf("%s must be %d to %d bytes, not %d", name, lo, hi, len(s))
	}
	return nil
}

// checkNoteID: a note id has the form of every id (wire.ValidID), so it can
// name a file under memory/notes/ and nothing else.
func checkNoteID(id string) error {
	if !wire.ValidID(id) {
		return errors.New(`id must be 1 to 64 characters of [a-z0-9-]`)
	}
	return nil
}

func decode(v jsontext.Value, dst any) error {
	if err := json.Unmarshal(v, dst, argOptions); err != nil {
		return fmt.Errorf("arguments do not parse: %w", err)
	}
	return nil
}

// need refuses a required member that was absent.
func need(name string, s argString) error {
	if !s.set {
		return fmt.Errorf("missing required member %q", name)
	}
	return nil
}

func checkArgPath(name, p string) error {
	if err := CheckPath(p); err != nil {
		return fmt.Errorf("%s %w", name, err)
	}
	return nil
}
