package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TurnEvent is something that happened during a turn, for the owner's client
// (bxctl chat, gatewayd), tagged by "type". Tool outcomes carry class and
// truncation, never content: the client shows what happened, not the data.
type TurnEvent interface {
	Message
	isTurnEvent()
}

// TurnSession opens every turn's response: the session the turn runs in
// (new when the client asked for none) and its current epoch.
type TurnSession struct {
	Session SessionID `json:"session"`
	Epoch   Epoch     `json:"epoch"`
}

// TurnText is text the assistant produced during the turn.
type TurnText struct {
	Content string `json:"content"`
}

// TurnToolCall is a tool call the model made.
type TurnToolCall struct {
	Call      CallID `json:"call"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
}

// TurnToolOutcome is how a tool call ended.
type TurnToolOutcome struct {
	Call      CallID      `json:"call"`
	Tool      string      `json:"tool"`
	Status    ToolStatus  `json:"status"`
	Reason    *DenyReason `json:"reason"`
	Class     DataClass   `json:"class"`
	Truncated bool        `json:"truncated"`
}

// TurnApprovalPending is sent when brokerd's pending frame arrives.
type TurnApprovalPending struct {
	Approval uint64    `json:"approval"`
	Tool     string    `json:"tool"`
	Expires  Timestamp `json:"expires"`
}

// TurnAnswerCut says the model's answer was cut short after Tokens tokens,
// for Reason, before the model ended it. It comes right before the turn's
// last event, which carries what the model wrote. Added by issue 16.
type TurnAnswerCut struct {
	Tokens uint64    `json:"tokens"`
	Reason CutReason `json:"reason"`
}

// TurnReply is the model's final answer for the turn.
type TurnReply struct {
	Content string `json:"content"`
}

// TurnFailed ends a turn that could not finish (the model or broker failed,
// or the step limit was reached); the session stays usable.
type TurnFailed struct {
	Message string `json:"message"`
}

func (TurnSession) isTurnEvent()         {}
func (TurnText) isTurnEvent()            {}
func (TurnToolCall) isTurnEvent()        {}
func (TurnToolOutcome) isTurnEvent()     {}
func (TurnApprovalPending) isTurnEvent() {}
func (TurnAnswerCut) isTurnEvent()       {}
func (TurnReply) isTurnEvent()           {}
func (TurnFailed) isTurnEvent()          {}

func (v TurnSession) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnSession
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"session", plain(v)})
}

func (v TurnText) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnText
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"text", plain(v)})
}

func (v TurnToolCall) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnToolCall
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"tool_call", plain(v)})
}

func (v TurnToolOutcome) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnToolOutcome
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"tool_outcome", plain(v)})
}

func (v TurnApprovalPending) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnApprovalPending
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"approval_pending", plain(v)})
}

func (v TurnAnswerCut) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnAnswerCut
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"answer_cut", plain(v)})
}

func (v TurnReply) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnReply
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"reply", plain(v)})
}

func (v TurnFailed) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain TurnFailed
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"failed", plain(v)})
}

var turnEvents = union[TurnEvent]{"turn event", "type", map[string]func([]byte) (TurnEvent, error){
	"session":          as[TurnSession, TurnEvent],
	"text":             as[TurnText, TurnEvent],
	"tool_call":        as[TurnToolCall, TurnEvent],
	"tool_outcome":     as[TurnToolOutcome, TurnEvent],
	"approval_pending": as[TurnApprovalPending, TurnEvent],
	"answer_cut":       as[TurnAnswerCut, TurnEvent],
	"reply":            as[TurnReply, TurnEvent],
	"failed":           as[TurnFailed, TurnEvent],
}}

// ToolStatus is how a tool call ended, as a client sees it.
type ToolStatus uint8

const (
	ToolResult ToolStatus = iota + 1
	ToolFailed
	ToolDenied
)

var toolStatusNames = enumNames[ToolStatus]{"tool status", []string{"", "result", "failed", "denied"}}

func (s ToolStatus) String() string                { return toolStatusNames.str(s) }
func (s ToolStatus) MarshalText() ([]byte, error)  { return toolStatusNames.text(s) }
func (s *ToolStatus) UnmarshalText(b []byte) error { return parseInto(toolStatusNames, b, s) }

// CutReason is why an answer was cut short: it reached the answer limit
// loopd sends as max_tokens ([model] max_answer_tokens), or the context
// was full.
type CutReason uint8

const (
	CutAnswerLimit CutReason = iota + 1
	CutContextFull
)

var cutReasonNames = enumNames[CutReason]{"cut reason", []string{"", "answer_limit", "context_full"}}

func (r CutReason) String() string                { return cutReasonNames.str(r) }
func (r CutReason) MarshalText() ([]byte, error)  { return cutReasonNames.text(r) }
func (r *CutReason) UnmarshalText(b []byte) error { return parseInto(cutReasonNames, b, r) }
