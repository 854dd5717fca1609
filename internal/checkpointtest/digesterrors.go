package checkpointtest

// Marker is text that no error may quote: the bad messages below carry it
// where an error that quoted the message would show it.
const Marker = "SECRET-MARKER-7f3a"

// DigestError is a message that decodes but cannot be digested, and the
// field the *checkpoint.DecodeError of its digest names.
type DigestError struct {
	Name      string
	In        string
	WantField string
}

// DigestErrors returns the messages that decode but cannot be canonicalised
// (so neither digested nor folded), each holding [Marker]: package
// checkpoint holds Message.Digest and Chain to them, package evidence the
// fold.
func DigestErrors() []DigestError {
	return []DigestError{
		{Name: "duplicate keys in artifact", In: `{"role":"tool","artifact":{"a":"` + Marker + `","a":2}}`, WantField: "artifact"},
		{Name: "number out of range", In: `{"role":"tool","artifact":[1e400],"content":"` + Marker + `"}`, WantField: "artifact"},
		{Name: "lone surrogate in content", In: `{"role":"user","content":[{"type":"text","text":"\ud800` + Marker + `"}]}`, WantField: "content"},
		{Name: "duplicate keys in args", In: `{"role":"assistant","tool_calls":[{"id":"x","args":{"` + Marker + `":1,"` + Marker + `":1}}]}`, WantField: "tool_calls.args"},
	}
}
