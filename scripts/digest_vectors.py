#!/usr/bin/env python3
"""Writes checkpoint/testdata/digest_vectors.json: fixed histories in the three
message forms of docs/protocol.md with their message and chain digests.

It is an independent implementation of the digests, written from the protocol and not
from the Go code, so that the Go tests check the Go digests against it. Run it
once, from the repository root, when the vectors change:

    python3 scripts/digest_vectors.py

JCS (RFC 8785) is json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False), which equals RFC 8785 for the data used here: strings,
integers, booleans and null, with object keys in the Basic Multilingual Plane
below the surrogates (where code point order is UTF-16 order). Python escapes
control characters as \\u00xx with lowercase hex and \\b \\t \\n \\f \\r with
their short forms, and writes everything else, U+2028 and DEL included, as
UTF-8: as RFC 8785 does. The script refuses data outside that subset.
"""

import hashlib
import json
import os
import sys

SEED = b"recall.v1"

ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
         "system": "system", "tool": "tool"}
STORED_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
CLASS_ROLES = {"HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system",
               "ToolMessage": "tool"}


def check_subset(v):
    """Refuses values for which json.dumps is not RFC 8785."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return
    if isinstance(v, int):
        if abs(v) > 2**53:
            raise ValueError("integer beyond 2^53: %r" % v)
        return
    if isinstance(v, list):
        for x in v:
            check_subset(x)
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if any(ord(c) >= 0xD800 for c in k):
                raise ValueError("key outside the BMP-below-surrogates range: %r" % k)
            check_subset(x)
        return
    raise ValueError("unsupported value for JCS by json.dumps: %r" % (v,))


def jcs(v):
    check_subset(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def content_parts(c):
    if c is None or c == "":
        return []
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    if isinstance(c, list):
        return c
    raise ValueError("content must be a string or a list")


def tool_call(c):
    if "function" in c and isinstance(c["function"], dict):
        fn = c["function"]
        args = fn["arguments"] if "arguments" in fn else {}
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        return {"id": c.get("id") or "", "name": fn.get("name") or "", "args": args}
    # LangChain's args are kept as given, a string too: only OpenAI's
    # arguments are parsed.
    args = c["args"] if "args" in c else {}
    return {"id": c.get("id") or "", "name": c.get("name") or "", "args": args}


def normalise(m):
    """Returns the normalised message for a message in any form."""
    if "role" in m:
        fields, role, typ = m, ROLES[m["role"]], m.get("type") or "chat"
    elif m.get("lc") == 1 and m.get("type") == "constructor":
        fields, role, typ = m["kwargs"], CLASS_ROLES[m["id"][-1]], "chat"
    elif isinstance(m.get("data"), dict):
        fields, role, typ = m["data"], STORED_ROLES[m["type"]], "chat"
    else:
        raise ValueError("unrecognised message shape")
    return {
        "role": role,
        "id": fields.get("id") or "",
        "type": typ,
        "content": content_parts(fields.get("content")),
        "tool_calls": [tool_call(c) for c in fields.get("tool_calls") or []],
        "tool_call_id": fields.get("tool_call_id") or "",
        "artifact": fields.get("artifact"),
    }


def digests(messages):
    c = hashlib.sha256(SEED).digest()
    msg_digests, chain = [], [c.hex()]
    for m in messages:
        d = hashlib.sha256(jcs(normalise(m))).digest()
        msg_digests.append(d.hex())
        c = hashlib.sha256(c + d).digest()
        chain.append(c.hex())
    return msg_digests, chain


# One conversation, written once per form. Texts exercise JCS string escaping:
# quotes, backslashes, control characters (escaped), DEL, U+2028, non-ASCII
# and characters outside the BMP (written as UTF-8), and "</script>".
TEXTS = [
    "We must ship by Friday.",
    "",
    None,  # the tool result, see below
    "Agreed: we'll use Postgres \u2014 \u00e9t\u00e9 \u4e2d\u6587 \U0001F600.",
    "Quotes \" and \\ backslash, tab\t, newline\n, cr\r, bell\u0007, \u0001\u001f, DEL\u007f, "
    "backspace\b, formfeed\f, line sep\u2028, </script>.",
    "Next, draft the schema.",
]

ARTIFACT = {  # keys deliberately unsorted; nested values of every kind
    "rows": [{"table": "invoice_lines", "size_gb": 310, "ok": True},
             {"table": "payments", "size_gb": -95, "note": None}],
    "count": 2,
    "b": {"z": 1, "a": [0, 9007199254740992, -1], "\u00e9": "caf\u00e9", "A": "upper"},
    "empty": {"list": [], "obj": {}, "str": ""},
}

TOOL_RESULT = '{"tables": 212, "largest": "invoice_lines"}'


def flat_history():
    return [
        {"id": "m0", "role": "user", "content": TEXTS[0]},
        {"id": "m1", "role": "assistant", "content": TEXTS[1],
         "tool_calls": [{"id": "t1", "name": "list_tables", "args": {"db": "billing", "limit": 10}},
                        {"id": "t2", "name": "ping"}]},
        {"id": "m2", "role": "tool", "tool_call_id": "t1", "content": TOOL_RESULT, "artifact": ARTIFACT},
        {"id": "m3", "role": "assistant", "content": TEXTS[3]},
        {"id": "m4", "role": "user", "content": [
            {"type": "text", "text": TEXTS[4]},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"id": "m5", "role": "system", "content": "Be brief."},
        {"id": "m6", "role": "user", "content": TEXTS[5]},
    ]


def stored_history():
    meta = {"additional_kwargs": {"refusal": None}, "response_metadata": {"model_name": "gpt-x", "finish_reason": "stop"},
            "name": None}
    return [
        {"type": "human", "data": {"content": TEXTS[0], "type": "human", "id": "m0", "example": False, **meta}},
        {"type": "ai", "data": {"content": TEXTS[1], "type": "ai", "id": "m1",
                                "tool_calls": [{"name": "list_tables", "args": {"limit": 10, "db": "billing"}, "id": "t1", "type": "tool_call"},
                                               {"name": "ping", "args": {}, "id": "t2", "type": "tool_call"}],
                                "invalid_tool_calls": [],
                                "usage_metadata": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
                                **meta}},
        {"type": "tool", "data": {"content": TOOL_RESULT, "type": "tool", "id": "m2", "tool_call_id": "t1",
                                  "artifact": ARTIFACT, "status": "success", "name": "list_tables"}},
        {"type": "ai", "data": {"content": TEXTS[3], "type": "ai", "id": "m3", "tool_calls": [], "invalid_tool_calls": [], **meta}},
        {"type": "human", "data": {"content": [
            {"type": "text", "text": TEXTS[4]},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}], "type": "human", "id": "m4", **meta}},
        {"type": "system", "data": {"content": "Be brief.", "type": "system", "id": "m5", **meta}},
        {"type": "human", "data": {"content": TEXTS[5], "type": "human", "id": "m6", **meta}},
    ]


def constructor_history():
    def ctor(cls, **kwargs):
        return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", cls], "kwargs": kwargs}
    return [
        ctor("HumanMessage", content=TEXTS[0], id="m0", additional_kwargs={}, response_metadata={}),
        ctor("AIMessage", content=TEXTS[1], id="m1",
             tool_calls=[{"name": "list_tables", "args": {"db": "billing", "limit": 10}, "id": "t1", "type": "tool_call"},
                         {"name": "ping", "args": {}, "id": "t2", "type": "tool_call"}],
             # OpenAI's form of the same calls: additional_kwargs never enters the digest.
             additional_kwargs={"tool_calls": [{"id": "t1", "type": "function", "function": {"name": "list_tables", "arguments": "{\"db\":\"billing\",\"limit\":10}"}}]},
             invalid_tool_calls=[], usage_metadata={"input_tokens": 1}, response_metadata={"id": "x"}),
        ctor("ToolMessage", content=TOOL_RESULT, id="m2", tool_call_id="t1", artifact=ARTIFACT, name="list_tables"),
        ctor("AIMessage", content=TEXTS[3], id="m3", tool_calls=[], invalid_tool_calls=[]),
        ctor("HumanMessage", content=[
            {"type": "text", "text": TEXTS[4]},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}], id="m4"),
        ctor("SystemMessage", content="Be brief.", id="m5"),
        ctor("HumanMessage", content=TEXTS[5], id="m6"),
    ]


def openai_history():
    """The flat form with OpenAI tool calls, aliases and explicit defaults."""
    h = flat_history()
    h[0] = {"id": "m0", "role": "human", "content": [{"type": "text", "text": TEXTS[0]}], "type": "chat"}
    h[1] = {"id": "m1", "role": "ai", "content": None, "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "list_tables", "arguments": "{\n  \"limit\": 10,\n  \"db\": \"billing\"\n}"}},
        {"id": "t2", "type": "function", "function": {"name": "ping", "arguments": "{}"}}],
        "name": "bot", "response_metadata": {"x": 1}}
    h[2]["artifact"] = dict(reversed(list(ARTIFACT.items())))
    return h


def variants():
    """Histories that must NOT share the chain of the one above."""
    base = flat_history()
    out = {}
    h = flat_history()
    h[3]["type"] = "thinking"
    out["channel_type_matters"] = h
    h = flat_history()
    h[3]["content"] = TEXTS[3] + " "
    out["whitespace_in_text_matters"] = h
    h = flat_history()
    h[1]["tool_calls"][0]["args"]["limit"] = 11
    out["tool_args_matter"] = h
    h = flat_history()
    h[2]["artifact"] = None
    out["artifact_matters"] = h
    h = flat_history()
    h[1]["tool_calls"][1]["args"] = "not json {"
    out["string_args"] = h
    h = flat_history()
    h[1]["tool_calls"][0]["args"] = json.dumps(h[1]["tool_calls"][0]["args"])
    out["langchain_string_args_kept"] = h
    h = flat_history()
    h[5]["role"] = "user"
    out["role_matters"] = h
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    groups = {
        "conversation": {
            "flat": flat_history(),
            "flat_openai_aliases_defaults": openai_history(),
            "langchain_stored": stored_history(),
            "langchain_constructor": constructor_history(),
        },
    }
    for name, h in variants().items():
        groups[name] = {"flat": h}
    vectors = []
    for group, forms in groups.items():
        for form, history in forms.items():
            md, chain = digests(history)
            vectors.append({
                "group": group,
                "form": form,
                "messages": history,
                "canonical": [jcs(normalise(m)).decode("utf-8") for m in history],
                "message_digests": md,
                "chain": chain,
            })
    # Histories in one group share their chain; different groups do not.
    by_group = {}
    for v in vectors:
        by_group.setdefault(v["group"], set()).add(v["chain"][-1])
    for g, chains in by_group.items():
        if len(chains) != 1:
            sys.exit("group %s: forms disagree" % g)
    if len({next(iter(c)) for c in by_group.values()}) != len(by_group):
        sys.exit("two groups share a chain")
    out = {
        "comment": "Generated by scripts/digest_vectors.py (docs/protocol.md, Digests); do not edit by hand.",
        "chain_start": hashlib.sha256(SEED).hexdigest(),
        "vectors": vectors,
    }
    path = os.path.join(root, "checkpoint", "testdata", "digest_vectors.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path, len(vectors), "histories")


if __name__ == "__main__":
    main()
