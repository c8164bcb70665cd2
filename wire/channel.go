package wire

// The channel protocol on loop.sock, the same for bxctl chat and gatewayd:
// one request per connection,
//
//	→ say { session, text }                        final: true
//	← turn_event { type: session, … }              final: false
//	← turn_event { type: text | tool_call | tool_outcome | approval_pending | answer_cut, … }   final: false
//	← turn_event { type: reply | failed, … }       final: true
//
// A turn event is a Message of kind turn_event whose body is the TurnEvent.

// Say is something the owner says. A nil Session starts a new session.
type Say struct {
	Session *SessionID `json:"session"`
	Text    string     `json:"text"`
}

func (Say) Kind() string { return KindSay }

// TurnEvents as messages: every variant is also the body of a turn_event frame.
func (TurnSession) Kind() string         { return KindTurnEvent }
func (TurnText) Kind() string            { return KindTurnEvent }
func (TurnToolCall) Kind() string        { return KindTurnEvent }
func (TurnToolOutcome) Kind() string     { return KindTurnEvent }
func (TurnApprovalPending) Kind() string { return KindTurnEvent }
func (TurnAnswerCut) Kind() string       { return KindTurnEvent }
func (TurnReply) Kind() string           { return KindTurnEvent }
func (TurnFailed) Kind() string          { return KindTurnEvent }
