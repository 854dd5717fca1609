"""Canonicalisation and digests, checked against RFC 8785's examples and the
recall repository's digest vectors (checkpoint/testdata/digest_vectors.json)."""

import json
import os
import struct
import unittest

from recall_client import (CHAIN_START, MessageError, append_event, canonicalize, chain, message_digest,
                           newest_user_index, normalize_message, prefix_digest, snapshot_event)
from recall_client.jcs import serialize_number

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VECTORS = os.path.join(ROOT, "checkpoint", "testdata", "digest_vectors.json")


class TestJCS(unittest.TestCase):
    def test_rfc8785_example(self):
        # RFC 8785, section 3.2.2.
        text = ('{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
                ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
                ' "literals": [null, true, false]}')
        want = ('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
                '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}')
        self.assertEqual(canonicalize(json.loads(text)).decode("utf-8"), want)

    def test_utf16_key_order(self):
        # RFC 8785, section 3.2.3: names sorted by UTF-16 code units, so
        # U+1F600 (a surrogate pair) sorts before U+FB33.
        v = {"\u20ac": 1, "\r": 2, "\ufb33": 3, "1": 4, "\U0001F600": 5, "\u0080": 6, "\u00f6": 7}
        keys = [k for k in json.loads(canonicalize(v))]
        self.assertEqual(keys, ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\ufb33"])

    def test_numbers(self):
        # RFC 8785, appendix B: IEEE 754 bit patterns and their ECMAScript form.
        table = [
            ("0000000000000000", "0"), ("8000000000000000", "0"),
            ("0000000000000001", "5e-324"), ("8000000000000001", "-5e-324"),
            ("7fefffffffffffff", "1.7976931348623157e+308"), ("ffefffffffffffff", "-1.7976931348623157e+308"),
            ("4340000000000000", "9007199254740992"), ("c340000000000000", "-9007199254740992"),
            ("4430000000000000", "295147905179352830000"),
            ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
            ("44b52d02c7e14af7", "1.0000000000000001e+23"),
            ("444b1ae4d6e2ef4e", "999999999999999700000"), ("444b1ae4d6e2ef4f", "999999999999999900000"),
            ("444b1ae4d6e2ef50", "1e+21"),
            ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
            ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
            ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
            ("41b3de4355555557", "333333333.33333343"),
            ("becbf647612f3696", "-0.0000033333333333333333"),
            ("43143ff3c1cb0959", "1424953923781206.2"),
        ]
        for bits, want in table:
            with self.subTest(bits=bits):
                x = struct.unpack(">d", bytes.fromhex(bits))[0]
                self.assertEqual(serialize_number(x), want)
        self.assertEqual(canonicalize([1, 1.0, -0.0, 10**21, 2**53 + 1, 0.1]), b"[1,1,0,1e+21,9007199254740992,0.1]")

    def test_strings(self):
        s = "\"\\\b\t\n\f\r\x00\x1f\x7f\u2028</script>\U0001F600"
        self.assertEqual(canonicalize(s), ('"\\"\\\\\\b\\t\\n\\f\\r\\u0000\\u001f\x7f\u2028</script>\U0001F600"').encode("utf-8"))

    def test_refuses(self):
        for v in [float("nan"), float("inf"), 10**400, "\ud800", {1: "x"}, object()]:
            with self.subTest(v=repr(v)[:20]):
                with self.assertRaises((ValueError, TypeError)):
                    canonicalize(v)


class TestDigestVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(VECTORS, encoding="utf-8") as f:
            cls.data = json.load(f)

    def test_chain_start(self):
        self.assertEqual(CHAIN_START.hex(), self.data["chain_start"])

    def test_vectors(self):
        self.assertGreater(len(self.data["vectors"]), 5)
        for v in self.data["vectors"]:
            with self.subTest(group=v["group"], form=v["form"]):
                msgs = v["messages"]
                self.assertEqual([canonicalize(normalize_message(m)).decode("utf-8") for m in msgs], v["canonical"])
                self.assertEqual([message_digest(m).hex() for m in msgs], v["message_digests"])
                self.assertEqual([c.hex() for c in chain(msgs)], v["chain"])
                self.assertEqual(prefix_digest(msgs), v["chain"][-1])

    def test_append_event_prefix(self):
        v = self.data["vectors"][0]
        ev = append_event("u", "c", v["messages"], 3, event_id="e")
        self.assertEqual(ev["offset"], 3)
        self.assertEqual(ev["prefix_digest"], v["chain"][3])
        self.assertEqual(ev["messages"], v["messages"][3:])
        self.assertEqual(newest_user_index(v["messages"]), len(v["messages"]) - 1)


class TestEvents(unittest.TestCase):
    def test_snapshot(self):
        ev = snapshot_event("u-42", "c-7", [{"role": "user", "content": "hi"}])
        self.assertEqual(ev["schema"], "recall.checkpoint.v1")
        self.assertEqual((ev["offset"], ev["prefix_digest"], ev["kind"]), (0, None, "snapshot"))
        self.assertEqual(len(ev["event_id"]), 32)

    def test_rejects_what_recall_rejects(self):
        bad = [
            [{"role": "robot", "content": "x"}],
            [{"content": "no role"}],
            [{"role": "user", "content": 7}],
            [{"role": "user", "id": 3}],
            [{"role": "assistant", "tool_calls": {"id": "t"}}],
            [{"lc": 1, "type": "constructor", "id": ["x", "Nope"], "kwargs": {}}],
        ]
        for msgs in bad:
            with self.subTest(msgs=msgs):
                with self.assertRaises(MessageError) as cm:
                    snapshot_event("u", "c", msgs)
                self.assertNotIn("no role", str(cm.exception))
        for user, conv in [("", "c"), ("u", ""), ("u" * 257, "c"), ("u\x00", "c")]:
            with self.assertRaises(ValueError):
                snapshot_event(user, conv, [])

    def test_openai_arguments(self):
        m = {"role": "assistant", "tool_calls": [
            {"id": "a", "function": {"name": "f", "arguments": ' {"x": 1} '}},
            {"id": "b", "function": {"name": "g", "arguments": " not json "}},
            {"id": "c", "function": {"name": "h"}},
            {"id": "d", "function": {"name": "i", "arguments": "NaN"}},
        ]}
        calls = normalize_message(m)["tool_calls"]
        self.assertEqual([c["args"] for c in calls], [{"x": 1}, " not json ", {}, "NaN"])


if __name__ == "__main__":
    unittest.main()
