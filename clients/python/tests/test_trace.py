"""The client sends a W3C traceparent header when given one: checked against
a local HTTP server that records the requests (no recall needed)."""

import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from recall_client import Client

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
EVIDENCE = {"version": 1, "cursor": 0, "message_count": 0, "buckets": {}, "message": None}


class _Recorder(BaseHTTPRequestHandler):
    seen = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.seen.append((self.command, self.path.split("?")[0].rsplit("/", 1)[-1], self.headers.get("traceparent")))
        body = {"stream_seq": 1, "duplicate": False} if self.path.startswith("/v1/checkpoints") else EVIDENCE
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


class TraceparentTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = "http://127.0.0.1:%d" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        _Recorder.seen.clear()

    def test_call_traceparent_is_sent(self):
        c = Client(self.url, "t")
        msgs = [{"id": "m0", "role": "user", "content": "hi"}]
        c.publish("u", "c", msgs, traceparent=TP)
        c.evidence("u", "c", traceparent=TP)
        c.search("u", "c", "q", traceparent=TP)
        c.context("u", "c", msgs, traceparent=TP)
        c.evidence("u", "c")
        self.assertEqual(_Recorder.seen, [
            ("POST", "checkpoints", TP),
            ("GET", "evidence", TP),
            ("POST", "search", TP),
            ("POST", "context", TP),
            ("GET", "evidence", None),
        ])

    def test_client_traceparent_is_the_default(self):
        current = [TP]
        c = Client(self.url, "t", traceparent=lambda: current[0])
        c.evidence("u", "c")
        current[0] = None
        c.evidence("u", "c")
        c.evidence("u", "c", traceparent=TP2)
        Client(self.url, "t", traceparent=TP2).publish_delete("u", "c")
        self.assertEqual([s[2] for s in _Recorder.seen], [TP, None, TP2, TP2])

    def test_malformed_traceparent_is_refused(self):
        with self.assertRaises(ValueError):
            Client(self.url, "t").evidence("u", "c", traceparent="not-a-traceparent")
        self.assertEqual(_Recorder.seen, [])


if __name__ == "__main__":
    unittest.main()
