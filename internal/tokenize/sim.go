package tokenize

import (
	"github.com/ardanlabs/jinja"

	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// simChat renders a chat request in the builtin:sim chat format: the same
// request parsing as a real model (content parts joined with newlines),
// then simtok.RenderChat. root is a decoded body (a dict).
func (m *Model) simChat(root jinja.Value) (Prompt, error) {
	msgsV, ok := dictGet(root, "messages")
	if !ok || !msgsV.IsList() {
		return Prompt{}, badRequest("messages must be a list")
	}
	agp, err := boolField(root, "add_generation_prompt", true)
	if err != nil {
		return Prompt{}, err
	}
	cfm, err := boolField(root, "continue_final_message", false)
	if err != nil {
		return Prompt{}, err
	}
	ast, err := boolField(root, "add_special_tokens", false)
	if err != nil {
		return Prompt{}, err
	}
	if agp && cfm {
		return Prompt{}, badRequest("cannot set both continue_final_message and add_generation_prompt to true")
	}
	items := msgsV.AsList().Items
	msgs := make([]simtok.Message, 0, len(items))
	for i, mv := range items {
		msg, err := parseMessage(mv, contentString)
		if err != nil {
			return Prompt{}, badRequest("messages[%d]: %v", i, err)
		}
		role, _ := dictGet(msg, "role")
		content, _ := dictGet(msg, "content")
		msgs = append(msgs, simtok.Message{Role: role.AsString(), Content: content.AsString()})
	}
	if cfm && len(msgs) == 0 {
		return Prompt{}, badRequest("continue_final_message needs a final message")
	}
	text := simtok.RenderChat(msgs, agp, cfm)
	ids, err := m.enc.Encode(text, ast)
	if err != nil {
		return Prompt{}, err
	}
	return Prompt{Text: text, TokenIDs: ids}, nil
}
