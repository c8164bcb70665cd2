package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ToolCall is one tool call as the model server returned it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// LogRecord is one line of a session log, tagged by "type".
type LogRecord interface{ isLogRecord() }

// SessionStart opens an epoch's file. Baseline is the SHA-256 of the prompt
// prefix (system prompt, core memory, tool schemas).
type SessionStart struct {
	Time     Timestamp `json:"time"`
	Session  SessionID `json:"session"`
	Epoch    Epoch     `json:"epoch"`
	Slot     uint32    `json:"slot"`
	Baseline Hash32    `json:"baseline"`
}

// UserRecord is what the owner said.
type UserRecord struct {
	Time    Timestamp `json:"time"`
	Content string    `json:"content"`
}

// AssistantRecord keeps the fields the chat template reads exactly as the
// server returned them, so a rebuilt request hits the prompt cache in full.
type AssistantRecord struct {
	Time             Timestamp  `json:"time"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content"`
	ToolCalls        []ToolCall `json:"tool_calls"`
}

// ToolResultRecord is a tool result as given to the model. Class and
// Untrusted are loopd's copy and never an input to policy.
type ToolResultRecord struct {
	Time       Timestamp `json:"time"`
	Call       CallID    `json:"call"`
	ToolCallID string    `json:"tool_call_id"`
	Content    string    `json:"content"`
	Class      DataClass `json:"class"`
	Untrusted  bool      `json:"untrusted"`
	Truncated  bool      `json:"truncated"`
}

// CacheLoss records that the server kept fewer prompt tokens than expected.
type CacheLoss struct {
	Time     Timestamp `json:"time"`
	Expected uint64    `json:"expected"`
	Got      uint64    `json:"got"`
}

// EpochEnd closes an epoch with the summary the next one starts from.
type EpochEnd struct {
	Time    Timestamp `json:"time"`
	Next    Epoch     `json:"next"`
	Summary string    `json:"summary"`
}

// RefusedRecord withdraws the record right before it, a user message or a
// tool result, because the request carrying it does not fit the model's
// context: PromptTokens of NCtx, the server's own numbers when it refused
// the request, loopd's measure for a tool result it withheld before
// sending. The withdrawn record stays in the log as the owner or the tool
// wrote it, but no request carries it again. Not in the pre-M1 spec's
// enum: added by issue 16.
type RefusedRecord struct {
	Time         Timestamp `json:"time"`
	PromptTokens uint64    `json:"prompt_tokens"`
	NCtx         uint64    `json:"n_ctx"`
}

// AnswerCut comes right before the assistant record of an answer the
// server cut short (finish_reason "length") after Tokens tokens, for
// Reason. The assistant record keeps the answer exactly as it was returned,
// and the next request replays it as generated, except for tool calls: a
// cut call's arguments are not JSON, which the server refuses in a
// request, so the calls of a cut answer are neither run nor replayed.
// Added by issue 16.
type AnswerCut struct {
	Time   Timestamp `json:"time"`
	Tokens uint64    `json:"tokens"`
	Reason CutReason `json:"reason"`
}

func (SessionStart) isLogRecord()     {}
func (UserRecord) isLogRecord()       {}
func (AssistantRecord) isLogRecord()  {}
func (ToolResultRecord) isLogRecord() {}
func (CacheLoss) isLogRecord()        {}
func (EpochEnd) isLogRecord()         {}
func (RefusedRecord) isLogRecord()    {}
func (AnswerCut) isLogRecord()        {}

func (v SessionStart) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain SessionStart
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"session_start", plain(v)})
}

func (v UserRecord) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain UserRecord
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"user", plain(v)})
}

func (v AssistantRecord) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain AssistantRecord
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"assistant", plain(v)})
}

func (v ToolResultRecord) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain ToolResultRecord
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"tool_result", plain(v)})
}

func (v CacheLoss) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain CacheLoss
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"cache_loss", plain(v)})
}

func (v EpochEnd) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain EpochEnd
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"epoch_end", plain(v)})
}

func (v RefusedRecord) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain RefusedRecord
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"refused", plain(v)})
}

func (v AnswerCut) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain AnswerCut
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"answer_cut", plain(v)})
}

var logRecords = union[LogRecord]{"log record", "type", map[string]func([]byte) (LogRecord, error){
	"session_start": as[SessionStart, LogRecord],
	"user":          as[UserRecord, LogRecord],
	"assistant":     as[AssistantRecord, LogRecord],
	"tool_result":   as[ToolResultRecord, LogRecord],
	"cache_loss":    as[CacheLoss, LogRecord],
	"epoch_end":     as[EpochEnd, LogRecord],
	"refused":       as[RefusedRecord, LogRecord],
	"answer_cut":    as[AnswerCut, LogRecord],
}}
