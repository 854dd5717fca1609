package assemble

import "strings"

// Error codes. The endpoint answers CodeBudgetTooSmall and
// CodeCannotCompact with 422 and every other code with 400.
const (
	// CodeBudgetTooSmall: the system text, the tool schemas and the current
	// request alone exceed the limit.
	CodeBudgetTooSmall = "budget_too_small"
	// CodeCannotCompact: a tool result of the current exchange cannot be
	// compacted within the per-result limit without cutting its references
	// or structure.
	CodeCannotCompact = "cannot_compact"
	// CodeInvalidBudget: a budget field is negative, absurd or not an
	// integer, or the reserves leave no room; Field names it.
	CodeInvalidBudget = "invalid_budget"
	// CodeInvalidMessages: the messages are not a valid history: not a list,
	// or a message that cannot be decoded (an unknown role, a content that
	// is neither a string nor a list of parts, …).
	CodeInvalidMessages = "invalid_messages"
	// CodeNoUserMessage: the history has no user message, so there is no
	// current request.
	CodeNoUserMessage = "no_user_message"
	// CodeInvalidRequest: another field of the request is malformed; Field
	// names it.
	CodeInvalidRequest = "invalid_request"
)

// Error is what Build and DecodeBody return for input they cannot assemble.
// Its message names fields, counts and estimates, never message text.
// errors.Is matches two Errors with the same Code, so callers branch with
// errors.Is(err, ErrBudgetTooSmall).
type Error struct {
	// Code is one of the Code constants.
	Code string
	// Field names the offending request field ("budget.prompt",
	// "tools[2]"), "" when the error is about the request as a whole.
	Field string
	// Message says what is wrong and how to fix it.
	Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Is reports whether target is an *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unprocessable reports whether the request was well formed but cannot be
// assembled within its budget (budget_too_small, cannot_compact), as
// opposed to malformed.
func (e *Error) Unprocessable() bool {
	return e.Code == CodeBudgetTooSmall || e.Code == CodeCannotCompact
}

// Sentinels for errors.Is.
var (
	ErrBudgetTooSmall  = &Error{Code: CodeBudgetTooSmall}
	ErrCannotCompact   = &Error{Code: CodeCannotCompact}
	ErrInvalidBudget   = &Error{Code: CodeInvalidBudget}
	ErrInvalidMessages = &Error{Code: CodeInvalidMessages}
	ErrNoUserMessage   = &Error{Code: CodeNoUserMessage}
	ErrInvalidRequest  = &Error{Code: CodeInvalidRequest}
)

func invalid(code, field, message string) *Error {
	return &Error{Code: code, Field: field, Message: message}
}
