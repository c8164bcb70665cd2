package fakellama

import (
	"fmt"
	"net/http"
)

// buildInfo stands in for llama-server's "b<number>-<commit>".
const buildInfo = "b0-fakellama"

// props is GET /props, with the fields a client reads (n_ctx, total_slots)
// where llama-server puts them.
func (s *Server) props() object {
	return object{
		{"default_generation_settings", object{
			{"id", 0},
			{"id_task", -1},
			{"n_ctx", s.opts.NCtx},
			{"speculative", false},
			{"is_processing", false},
			{"params", object{
				{"n_predict", -1},
				{"temperature", 0.8},
				{"top_k", 40},
				{"top_p", 0.95},
				{"min_p", 0.05},
				{"max_tokens", -1},
				{"n_keep", 0},
				{"stream", true},
			}},
			{"prompt", ""},
		}},
		{"total_slots", s.opts.Slots},
		{"model_path", s.opts.Model},
		{"chat_template", "fakellama chatml"},
		{"modalities", object{{"vision", false}, {"audio", false}}},
		{"build_info", buildInfo},
		{"is_sleeping", false},
	}
}

// models is GET /v1/models: always one model.
func (s *Server) models() object {
	return object{
		{"object", "list"},
		{"data", []object{{
			{"id", s.opts.Model},
			{"object", "model"},
			{"created", s.opts.Now().Unix()},
			{"owned_by", "llamacpp"},
			{"meta", object{
				{"vocab_type", 2},
				{"n_vocab", NVocab},
				{"n_ctx_train", s.opts.NCtx},
				{"n_embd", 1024},
				{"n_params", 1000000},
				{"size", 1000000},
			}},
		}}},
	}
}

// errorType is llama-server's error "type" for an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusNotImplemented:
		return "not_supported_error"
	case http.StatusServiceUnavailable:
		return "unavailable_error"
	}
	return "server_error"
}

// errorBody is llama-server's format_error_response: code, message, type.
func errorBody(status int, message string) object {
	return object{{"code", status}, {"message", message}, {"type", errorType(status)}}
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, object{{"error", errorBody(status, message)}})
}

// writeContextError is llama-server's answer to a prompt that does not fit
// the slot: a 400 of its own type, with the two numbers a client needs.
func writeContextError(w http.ResponseWriter, nPrompt, nCtx int) {
	msg := fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", nPrompt, nCtx)
	writeJSON(w, http.StatusBadRequest, object{{"error", object{
		{"code", http.StatusBadRequest},
		{"message", msg},
		{"type", "exceed_context_size_error"},
		{"n_prompt_tokens", nPrompt},
		{"n_ctx", nCtx},
	}}})
}
