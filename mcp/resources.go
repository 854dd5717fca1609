package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallhq/recall/api"
)

// The resource templates of a conversation's evidence: the caller's own
// conversation, and any user's for a caller that acts for any user.
const (
	EvidenceTemplate     = "recall://conversations/{conversation_id}/evidence"
	UserEvidenceTemplate = "recall://users/{user_id}/conversations/{conversation_id}/evidence"
)

// addResources adds the evidence resource templates.
func (s *Server) addResources() {
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "conversation-evidence",
		Title:       "Conversation evidence",
		URITemplate: EvidenceTemplate,
		Description: "A conversation's evidence, as recall_evidence answers it (JSON): the message to put into the next prompt, its cursor, version and lagging.",
		MIMEType:    "application/json",
	}, s.readResource)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "user-conversation-evidence",
		Title:       "A user's conversation evidence",
		URITemplate: UserEvidenceTemplate,
		Description: "Any user's conversation evidence, for a token that acts for any user (recall:service).",
		MIMEType:    "application/json",
	}, s.readResource)
}

// readResource answers a read of either template.
func (s *Server) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	userID, conversationID, ok := parseEvidenceURI(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	ev, err := s.readEvidence(ctx, s.callerOf(req.Extra), evidenceInput{UserID: userID, ConversationID: conversationID})
	if err != nil {
		if errors.Is(err, errUnknownConversation) {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		return nil, s.resourceError(ctx, err)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// resourceError is the JSON-RPC error of a failed read: invalid params for
// the API's answers to the client (forbidden, an invalid id), an internal
// error for the rest, with the tool error's text.
func (s *Server) resourceError(ctx context.Context, err error) error {
	code := int64(jsonrpc.CodeInternalError)
	if ae, ok := errors.AsType[*api.Error](err); ok && ae.Status < http.StatusInternalServerError {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: s.toolError(ctx, "resource", err).Error()}
}

// parseEvidenceURI reads the ids of an evidence resource's URI; userID is
// "" for the caller's own conversation.
func parseEvidenceURI(uri string) (userID, conversationID string, ok bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "recall" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", false
	}
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	var raw []string
	switch {
	case u.Host == "conversations" && len(segs) == 2 && segs[1] == "evidence":
		raw = []string{"", segs[0]}
	case u.Host == "users" && len(segs) == 4 && segs[1] == "conversations" && segs[3] == "evidence":
		raw = []string{segs[0], segs[2]}
	default:
		return "", "", false
	}
	ids := make([]string, 2)
	for i, r := range raw {
		if ids[i], err = url.PathUnescape(r); err != nil {
			return "", "", false
		}
	}
	if ids[1] == "" || (u.Host == "users" && ids[0] == "") {
		return "", "", false
	}
	return ids[0], ids[1], true
}
