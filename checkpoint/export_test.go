package checkpoint

// The external tests of this package reach these unexported names; they
// are exported only when the package is compiled for its tests.

var AppendCanonicalJSON = appendCanonicalJSON

var AppendCanonicalString = appendCanonicalString

var DecodeRawMessages = decodeRawMessages

var DecodeString = decodeString

func (r Limits) WithDefaults() Limits { return r.withDefaults() }

func (r *Message) ExportDigest(a0 bool) (Digest, error) { return r.digest(a0) }

var ParseEventFast = parseEventFast

var ParseEventGeneral = parseEventGeneral

var PlainString = plainString

var Reject = reject

var StringValue = stringValue
