// Package checkpointtest is test support for the wire format: message
// builders, random and realistic histories, the sample conversations, the
// messages that decode but cannot be digested ([DigestErrors]) and
// the digest vectors, shared by the tests of packages checkpoint and
// evidence. Only tests import it.
package checkpointtest
