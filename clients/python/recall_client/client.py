"""A client for recall's HTTP API, on the standard library alone."""

import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from .digest import chain
from .events import append_event, delete_event, snapshot_event, validate_id, validate_key

__all__ = ["Client", "RecallError"]

MAX_WAIT = 30.0  # the longest wait one request may ask for

# The form of a W3C Trace Context traceparent header.
_TRACEPARENT = re.compile(r"\A[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}\Z")


class RecallError(Exception):
    """An error answer of the API: status, code ("forbidden", "invalid", …)
    and message."""

    def __init__(self, status, code, message):
        self.status, self.code, self.message = status, code, message
        super().__init__("recall answered %d %s: %s" % (status, code, message))


def _seconds(wait):
    if wait is None:
        return None
    if isinstance(wait, str):
        return wait
    return "%gs" % float(wait)


class Client:
    """Publishes checkpoints and reads evidence over recall's HTTP API.

    url is the API's base URL (RECALL_API_URL, e.g. http://127.0.0.1:8080);
    token a bearer JWT (RECALL_TOKEN). With mode="append", publish() sends
    only the messages added since the last event it published for the
    conversation, when the earlier ones are unchanged (their chain digest
    proves it); otherwise, and in the default mode="snapshot", every event
    carries the whole history.

    traceparent, a W3C traceparent string or a function returning one (or
    None), is sent in the traceparent header of every request, so that
    recall's spans for the call join that trace; a call's own traceparent
    argument wins. With OpenTelemetry, pass a function that injects the
    current context and returns its "traceparent".
    """

    def __init__(self, url, token, timeout=40.0, mode="snapshot", max_conversations=10000, traceparent=None):
        if mode not in ("snapshot", "append"):
            raise ValueError('mode must be "snapshot" or "append"')
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.mode = mode
        self._max = max_conversations
        self._sent = {}  # (user, conversation) -> (length, chain digest of that prefix)
        self._lock = threading.Lock()
        self.traceparent = traceparent

    # HTTP

    def _traceparent(self, given):
        """Returns the traceparent a call sends: given, else the client's
        (called when it is a function); None for none."""
        tp = given
        if tp is None:
            tp = self.traceparent() if callable(self.traceparent) else self.traceparent
        if tp is None or tp == "":
            return None
        if not isinstance(tp, str) or not _TRACEPARENT.match(tp):
            raise ValueError("traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), not %r" % (tp,))
        return tp

    def _request(self, method, path, body=None, query=None, timeout=None, traceparent=None):
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        tp = self._traceparent(traceparent)
        if tp:
            headers["traceparent"] = tp
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        with self._open(req, timeout or self.timeout) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None

    @staticmethod
    def _open(req, timeout):
        """Opens req and returns the response; raises RecallError for an
        error answer."""
        try:
            return urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            raw = e.read()
            code, message = "http_%d" % e.code, e.reason
            try:
                err = json.loads(raw)["error"]
                code, message = err["code"], err["message"]
            except (ValueError, KeyError, TypeError):
                pass
            raise RecallError(e.code, code, message) from None

    @staticmethod
    def _user_path(user_id):
        validate_id("user_id", user_id)
        return "/v1/users/%s" % urllib.parse.quote(user_id, safe="")

    @staticmethod
    def _conversation_path(user_id, conversation_id):
        validate_key(user_id, conversation_id)
        q = lambda s: urllib.parse.quote(s, safe="")
        return "/v1/users/%s/conversations/%s" % (q(user_id), q(conversation_id))

    # Publishing

    def publish_event(self, event, traceparent=None):
        """POSTs a checkpoint event to /v1/checkpoints and returns
        {"stream_seq", "duplicate"} once the stream has acknowledged it.
        Raises RecallError (code malformed, invalid, unsupported_schema,
        too_large, forbidden, …) when recall refuses it. recall carries the
        traceparent (this one, or the client's) into the event."""
        return self._request("POST", "/v1/checkpoints", body=event, traceparent=traceparent)

    def publish(self, user_id, conversation_id, history, event_id=None, traceparent=None):
        """Publishes the conversation's whole current history (append-only,
        ending with the newest user message), as a snapshot or, in append
        mode, an append event. Returns the ack with the event's event_id,
        offset and number of messages sent."""
        key = (user_id, conversation_id)
        history = list(history)
        offset = 0
        digests = None
        if self.mode == "append":
            # One pass over the history: its chain proves whether the prefix
            # sent last time is unchanged.
            digests = chain(history)
            with self._lock:
                sent = self._sent.get(key)
            if sent is not None and 0 < sent[0] <= len(history) and digests[sent[0]] == sent[1]:
                offset = sent[0]
        if offset:
            event = append_event(user_id, conversation_id, history, offset, event_id)
        else:
            event = snapshot_event(user_id, conversation_id, history, event_id)
        ack = self.publish_event(event, traceparent=traceparent)
        if self.mode == "append":
            with self._lock:
                self._sent.pop(key, None)
                if len(self._sent) >= self._max:
                    self._sent.pop(next(iter(self._sent)))
                self._sent[key] = (len(history), digests[-1])
        ack.update(event_id=event["event_id"], offset=offset, sent=len(event["messages"]))
        return ack

    def publish_delete(self, user_id, conversation_id, event_id=None, traceparent=None):
        """Publishes a delete event (the stream's way of deleting)."""
        with self._lock:
            self._sent.pop((user_id, conversation_id), None)
        return self.publish_event(delete_event(user_id, conversation_id, event_id), traceparent=traceparent)

    def forget(self, user_id, conversation_id):
        """Makes the next publish of the conversation a full snapshot."""
        with self._lock:
            self._sent.pop((user_id, conversation_id), None)

    # Reading

    def evidence(self, user_id, conversation_id, min_cursor=None, wait=None, max_tokens=None, traceparent=None):
        """Returns the conversation's evidence (GET …/evidence). With
        min_cursor and wait (seconds, or a duration such as "2s", at most 30 s)
        the answer waits until cursor >= min_cursor, and says "lagging": true
        when the deadline came first."""
        path = self._conversation_path(user_id, conversation_id) + "/evidence"
        query = {"min_cursor": min_cursor, "wait": _seconds(wait), "max_tokens": max_tokens}
        timeout = self.timeout
        if wait is not None and not isinstance(wait, str):
            timeout = max(timeout, float(wait) + 10)
        return self._request("GET", path, query=query, timeout=timeout, traceparent=traceparent)

    def wait_for(self, user_id, conversation_id, min_cursor, timeout=60.0, max_tokens=None, traceparent=None):
        """Waits up to timeout seconds until the evidence's cursor reaches
        min_cursor and returns it; raises TimeoutError with the last cursor
        otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ev = self.evidence(user_id, conversation_id, min_cursor=min_cursor,
                               wait=max(0.0, min(MAX_WAIT, left)), max_tokens=max_tokens, traceparent=traceparent)
            if ev["cursor"] >= min_cursor:
                return ev
            if time.monotonic() >= deadline:
                raise TimeoutError("the evidence cursor is %d, short of %d, after %gs; is a recall worker running?"
                                   % (ev["cursor"], min_cursor, timeout))

    def search(self, user_id, conversation_id, query, max_tokens=None, traceparent=None):
        """Returns the evidence selected for query instead of the current
        request (POST …/evidence/search): the same shape as evidence()."""
        body = {"query": query}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return self._request("POST", self._conversation_path(user_id, conversation_id) + "/evidence/search", body=body,
                             traceparent=traceparent)

    def context(self, user_id, conversation_id, messages, system=None, tools=None, budget=None,
                evidence=None, min_cursor=None, wait=None, traceparent=None):
        """Returns the bounded messages of the next model call (POST …/context):
        {"messages", "estimated_tokens", "limit", "dropped_turns",
        "compacted_tool_results", "evidence"}."""
        body = {"messages": list(messages)}
        for k, v in (("system", system), ("tools", tools), ("budget", budget), ("evidence", evidence),
                     ("min_cursor", min_cursor), ("wait", _seconds(wait))):
            if v is not None:
                body[k] = v
        return self._request("POST", self._conversation_path(user_id, conversation_id) + "/context", body=body,
                             traceparent=traceparent)

    def delete(self, user_id, conversation_id):
        """Deletes the conversation: its evidence and every copy of its
        messages recall holds. Later events for it are rejected as deleted."""
        self.forget(user_id, conversation_id)
        self._request("DELETE", self._conversation_path(user_id, conversation_id))

    # A user's data as a whole

    def conversations(self, user_id, limit=None, after=None):
        """Returns a page of the user's conversations that hold state, ordered
        by id (GET /v1/users/{user}/conversations): {"conversations": [...],
        "next": ...}. Pass next as after for the next page; it is None on the
        last one."""
        return self._request("GET", self._user_path(user_id) + "/conversations",
                             query={"limit": limit, "after": after})

    def all_conversations(self, user_id, limit=None):
        """Yields every conversation of the user that holds state, page after
        page."""
        after = None
        while True:
            page = self.conversations(user_id, limit=limit, after=after)
            yield from page["conversations"]
            after = page["next"]
            if after is None:
                return

    def export(self, user_id, timeout=None):
        """Yields everything recall holds for the user (GET
        /v1/users/{user}/export), line by line as it arrives: "conversation"
        lines, then "entry", then "rejection" (never with a payload), and last
        {"type": "end", ...} with the counts. Raises RecallError when the
        stream ends without its end line (it was cut short). timeout bounds
        each read of the socket (default: the client's)."""
        req = urllib.request.Request(self.url + self._user_path(user_id) + "/export", method="GET",
                                     headers={"Authorization": "Bearer " + self.token,
                                              "Accept": "application/x-ndjson"})
        ended = False
        with self._open(req, timeout or self.timeout) as resp:
            for raw in resp:
                if not raw.strip():
                    continue
                if ended:
                    raise RecallError(200, "malformed_export", "lines after the end line")
                line = json.loads(raw)
                ended = line.get("type") == "end"
                yield line
        if not ended:
            raise RecallError(200, "export_cut_short", "the export has no end line: it was cut short; ask again")

    def delete_user(self, user_id):
        """Deletes every conversation of the user (DELETE /v1/users/{user}):
        each key stays deleted; new conversation ids are accepted."""
        self._request("DELETE", self._user_path(user_id))
        with self._lock:
            for key in [k for k in self._sent if k[0] == user_id]:
                del self._sent[key]
