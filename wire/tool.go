package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ToolRequest asks brokerd to run one tool call. Arguments is the model's
// JSON object, carried unparsed: only brokerd's policy parses it.
type ToolRequest struct {
	Session   SessionID `json:"session"`
	Call      CallID    `json:"call"`
	Tool      string    `json:"tool"`
	Arguments string    `json:"arguments"`
}

// ToolResponse is brokerd's answer to a ToolRequest, tagged by "status":
// *Response types below. PendingResponse is never final.
type ToolResponse interface {
	Message
	isToolResponse()
}

// PendingResponse says the call waits for the owner; Approval is the seq of
// the call's Decision record.
type PendingResponse struct {
	Approval uint64    `json:"approval"`
	Expires  Timestamp `json:"expires"`
}

// ResultResponse carries the tool's output to the model.
type ResultResponse struct {
	Content   string    `json:"content"`
	Class     DataClass `json:"class"`
	Untrusted bool      `json:"untrusted"`
	Truncated bool      `json:"truncated"`
}

// FailedResponse says the tool ran (or could not run) and failed; it is not a
// policy decision.
type FailedResponse struct {
	Message string `json:"message"`
}

// DeniedResponse says policy refused the call.
type DeniedResponse struct {
	Reason DenyReason `json:"reason"`
}

func (PendingResponse) isToolResponse() {}
func (ResultResponse) isToolResponse()  {}
func (FailedResponse) isToolResponse()  {}
func (DeniedResponse) isToolResponse()  {}

func (PendingResponse) Kind() string { return KindToolResponse }
func (ResultResponse) Kind() string  { return KindToolResponse }
func (FailedResponse) Kind() string  { return KindToolResponse }
func (DeniedResponse) Kind() string  { return KindToolResponse }

func (v PendingResponse) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain PendingResponse
	return json.MarshalEncode(e, struct {
		Tag   string `json:"status"`
		plain `json:",inline"`
	}{"pending_approval", plain(v)})
}

func (v ResultResponse) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain ResultResponse
	return json.MarshalEncode(e, struct {
		Tag   string `json:"status"`
		plain `json:",inline"`
	}{"result", plain(v)})
}

func (v FailedResponse) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain FailedResponse
	return json.MarshalEncode(e, struct {
		Tag   string `json:"status"`
		plain `json:",inline"`
	}{"failed", plain(v)})
}

func (v DeniedResponse) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain DeniedResponse
	return json.MarshalEncode(e, struct {
		Tag   string `json:"status"`
		plain `json:",inline"`
	}{"denied", plain(v)})
}

var toolResponses = union[ToolResponse]{"tool response", "status", map[string]func([]byte) (ToolResponse, error){
	"pending_approval": as[PendingResponse, ToolResponse],
	"result":           as[ResultResponse, ToolResponse],
	"failed":           as[FailedResponse, ToolResponse],
	"denied":           as[DeniedResponse, ToolResponse],
}}
