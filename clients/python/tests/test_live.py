"""The client against a running recall (recall dev prints what to export):

    RECALL_API_URL=http://127.0.0.1:8080 RECALL_TOKEN=<service token> \\
    RECALL_JWT_SECRET=<the secret> python3 -m unittest discover -s tests -t .

RECALL_JWT_SECRET lets the tests sign user tokens (recall dev keeps it in
its data folder, .recall-dev/jwt-secret).

The search and context tests need POST …/evidence/search and POST …/context.
"""

import json
import os
import unittest
import uuid

from recall_client import Client, RecallError, newest_user_index, sign_token, snapshot_event

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def sample(name):
    with open(os.path.join(ROOT, "examples", "conversations", name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def turns(history):
    """Every prefix of history that ends in a user message, as an agent
    backend would publish them turn by turn."""
    return [history[: i + 1] for i, m in enumerate(history) if m.get("role") == "user"]


class LiveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [k for k in ("RECALL_API_URL", "RECALL_TOKEN", "RECALL_JWT_SECRET") if not os.environ.get(k)]
        if missing:
            raise RuntimeError("set %s: run `recall dev` and paste its export lines (the JWT secret is in "
                               ".recall-dev/jwt-secret)" % ", ".join(missing))
        cls.url = os.environ["RECALL_API_URL"]
        cls.secret = os.environ["RECALL_JWT_SECRET"]
        cls.service = Client(cls.url, os.environ["RECALL_TOKEN"])

    def key(self):
        return "py-" + uuid.uuid4().hex[:12], "conv-" + uuid.uuid4().hex[:8]

    def user_client(self, user, **kw):
        return Client(self.url, sign_token(self.secret, user, ttl=600), **kw)

    def publish_turns(self, client, user, conv, history):
        acks = []
        for prefix in turns(history):
            acks.append(client.publish(user, conv, prefix))
        return acks, client.wait_for(user, conv, newest_user_index(history), timeout=60)

    def test_publish_turns_in_append_mode_and_read(self):
        user, conv = self.key()
        history = sample("planning")["messages"]
        client = self.user_client(user, mode="append")
        acks, ev = self.publish_turns(client, user, conv, history)
        self.assertEqual(acks[0]["offset"], 0)
        self.assertTrue(all(a["offset"] > 0 for a in acks[1:]), [a["offset"] for a in acks])
        self.assertEqual(sum(a["sent"] for a in acks), len(history))
        self.assertEqual(ev["cursor"], newest_user_index(history))
        self.assertEqual(ev["message_count"], len(history))
        self.assertFalse(ev["lagging"])
        self.assertEqual(ev["message"]["role"], "assistant")
        envelope = json.loads(ev["message"]["content"])
        self.assertEqual(envelope["type"], "untrusted_historical_evidence")
        self.assertGreater(sum(len(b) for b in ev["buckets"].values()), 0)
        # The prompt as the README builds it: system, evidence, history[cursor:].
        prompt = [{"role": "system", "content": "Be brief."}, ev["message"]] + history[ev["cursor"]:]
        self.assertEqual(prompt[-1], history[-1])

    def test_snapshot_mode_and_langchain_forms(self):
        user, conv = self.key()
        history = [
            {"type": "human", "data": {"content": "We must ship by Friday.", "id": "m0"}},
            {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"],
             "kwargs": {"content": "Agreed: we'll use Postgres.", "id": "m1"}},
            {"role": "user", "content": "Next, draft the schema.", "id": "m2"},
        ]
        client = self.user_client(user)
        ack = client.publish(user, conv, history)
        self.assertEqual((ack["offset"], ack["sent"], ack["duplicate"]), (0, 3, False))
        ev = client.wait_for(user, conv, 2)
        excerpts = [e["excerpt"] for b in ev["buckets"].values() for e in b]
        self.assertIn("We must ship by Friday.", excerpts)
        self.assertIn("Agreed: we'll use Postgres.", excerpts)

    def test_duplicate_event(self):
        user, conv = self.key()
        client = self.user_client(user)
        ev = snapshot_event(user, conv, [{"role": "user", "content": "hello", "id": "m0"}])
        first = client.publish_event(ev)
        again = client.publish_event(ev)
        self.assertFalse(first["duplicate"])
        self.assertTrue(again["duplicate"])
        self.assertEqual(first["stream_seq"], again["stream_seq"])

    def test_refusals(self):
        user, conv = self.key()
        client = self.user_client(user)
        with self.assertRaises(RecallError) as cm:
            client.publish_event({"schema": "recall.checkpoint.v1", "event_id": "x", "user_id": user})
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid"))
        with self.assertRaises(RecallError) as cm:
            client.publish_event({"schema": "recall.checkpoint.v9", "event_id": "x", "user_id": user,
                                  "conversation_id": conv, "messages": []})
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "unsupported_schema"))
        with self.assertRaises(RecallError) as cm:
            client.publish("someone-else", conv, [{"role": "user", "content": "hi"}])
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))
        with self.assertRaises(RecallError) as cm:
            client.evidence("someone-else", conv)
        self.assertEqual(cm.exception.status, 403)
        with self.assertRaises(RecallError) as cm:
            Client(self.url, "not-a-token").evidence(user, conv)
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))

    def test_lagging_and_unknown(self):
        user, conv = self.key()
        ev = self.service.evidence(user, conv, min_cursor=5, wait=0.2)
        self.assertTrue(ev["lagging"])
        self.assertEqual((ev["version"], ev["cursor"], ev["message"]), (0, 0, None))

    def test_delete(self):
        user, conv = self.key()
        client = self.user_client(user)
        history = sample("coding")["messages"]
        self.publish_turns(client, user, conv, history[: newest_user_index(history) + 1])
        client.delete(user, conv)
        ev = client.evidence(user, conv)
        self.assertEqual((ev["version"], ev["cursor"], ev["message"]), (0, 0, None))
        # The key stays deleted: a later snapshot is rejected, not applied.
        client.publish(user, conv, history)
        ev = client.evidence(user, conv, min_cursor=1, wait=1)
        self.assertEqual((ev["version"], ev["cursor"]), (0, 0))

    def test_user_conversations_export_and_deletion(self):
        user, _ = self.key()
        client = self.user_client(user)
        history = sample("planning")["messages"]
        for conv in ("c-1", "c-2"):
            self.publish_turns(client, user, conv, history)

        first = client.conversations(user, limit=1)
        self.assertEqual([c["conversation_id"] for c in first["conversations"]], ["c-1"])
        self.assertEqual(first["next"], "c-1")
        self.assertEqual(first["conversations"][0]["cursor"], newest_user_index(history))
        second = client.conversations(user, limit=1, after=first["next"])
        self.assertEqual([c["conversation_id"] for c in second["conversations"]], ["c-2"])
        self.assertIsNone(second["next"])
        self.assertEqual([c["conversation_id"] for c in client.all_conversations(user, limit=1)], ["c-1", "c-2"])

        lines = list(client.export(user))
        kinds = [t for i, t in enumerate(l["type"] for l in lines) if i == 0 or lines[i - 1]["type"] != t]
        self.assertEqual([k for k in kinds if k != "rejection"], ["conversation", "entry", "end"])
        count = lambda t: sum(1 for l in lines if l["type"] == t)
        self.assertEqual(lines[-1], {"type": "end", "conversations": 2, "entries": count("entry"),
                                     "rejections": count("rejection")})
        self.assertGreater(count("entry"), 0)

        other = self.user_client(user + "-other")
        for call in (lambda: other.conversations(user), lambda: list(other.export(user)),
                     lambda: other.delete_user(user)):
            with self.assertRaises(RecallError) as cm:
                call()
            self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))
        with self.assertRaises(RecallError) as cm:
            client.conversations(user, limit=1001)
        self.assertEqual(cm.exception.status, 400)

        client.delete_user(user)
        self.assertEqual(client.conversations(user), {"conversations": [], "next": None})
        # The deleted key stays deleted; a new conversation id is accepted.
        client.publish(user, "c-1", history)
        ev = client.evidence(user, "c-1", min_cursor=1, wait=1)
        self.assertEqual((ev["version"], ev["cursor"]), (0, 0))
        self.publish_turns(client, user, "c-3", history)
        self.assertEqual([c["conversation_id"] for c in client.conversations(user)["conversations"]], ["c-3"])
        client.delete_user(user)

    def test_search(self):
        """Needs POST …/evidence/search."""
        user, conv = self.key()
        client = self.user_client(user)
        history = sample("planning")["messages"]
        self.publish_turns(client, user, conv, history)
        got = client.search(user, conv, "what did we decide about the database?", max_tokens=400)
        for k in ("version", "cursor", "buckets", "message", "lagging"):
            self.assertIn(k, got)
        self.assertEqual(got["cursor"], newest_user_index(history))
        with self.assertRaises(RecallError) as cm:
            client.search(user, conv, "")
        self.assertEqual(cm.exception.status, 400)

    def test_context(self):
        """Needs POST …/context."""
        user, conv = self.key()
        client = self.user_client(user)
        history = sample("planning")["messages"]
        self.publish_turns(client, user, conv, history)
        got = client.context(user, conv, history, system="You are a planning assistant.",
                             budget={"context_window": 32768, "prompt": 16000}, min_cursor=newest_user_index(history),
                             wait=5)
        self.assertEqual(got["messages"][0]["role"], "system")
        # The whole history fits: evidence chosen from older messages would
        # be empty, so there is none (it never repeats what the prompt holds).
        self.assertEqual(got["dropped_turns"], 0)
        self.assertFalse(got["evidence"]["included"])
        self.assertLessEqual(got["estimated_tokens"]["total"], got["limit"])
        self.assertEqual(got["messages"][-1]["content"], history[-1]["content"])


if __name__ == "__main__":
    unittest.main()
