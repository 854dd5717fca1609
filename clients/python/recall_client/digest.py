"""Message normalisation and chain digests of the recall protocol.

A digest is over what a message means, not how it was written: the flat
form, LangChain's stored form (messages_to_dict) and LangChain's constructor
form (dumpd) of the same message have the same digest. See docs/protocol.md
in the recall repository.
"""

import hashlib
import json

from .jcs import canonicalize

__all__ = [
    "CHAIN_START",
    "MessageError",
    "normalize_message",
    "message_digest",
    "chain",
    "prefix_digest",
    "newest_user_index",
]

CHAIN_START = hashlib.sha256(b"recall.v1").digest()

_ROLES = {
    "user": "user", "human": "user",
    "assistant": "assistant", "ai": "assistant",
    "system": "system", "developer": "system",
    "tool": "tool", "function": "tool",
}
_CLASSES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}


class MessageError(ValueError):
    """A message recall would reject as invalid. The text names the field,
    never the message's content."""

    def __init__(self, index, field, problem):
        self.index, self.field, self.problem = index, field, problem
        where = "message" if index is None else "message %d" % index
        if field:
            where += ": field %r" % field
        super().__init__(where + ": " + problem)


def _role(name, index):
    if not isinstance(name, str):
        raise MessageError(index, "role", "must be a string")
    role = _ROLES.get(name.lower())
    if role is None:
        raise MessageError(index, "role", "must be one of user, assistant, system, tool (aliases human, ai)")
    return role


def _class_role(cls, fields, index):
    if cls.endswith("Chunk"):
        cls = cls[: -len("Chunk")]
    if cls == "ChatMessage":
        return _role(fields.get("role"), index)
    role = _CLASSES.get(cls)
    if role is None:
        raise MessageError(index, "id", "names an unsupported message class")
    return role


def _stored_role(kind, data, index):
    if kind in ("chat", "generic"):
        return _role(data.get("role"), index)
    if isinstance(kind, str):
        role = _ROLES.get(kind[: -len("Chunk")].lower() if kind.endswith("Chunk") else kind.lower())
        if role is not None:
            return role
        return _class_role(kind, data, index)
    raise MessageError(index, "type", "names an unsupported message type")


def _opt_string(fields, name, index):
    v = fields.get(name)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise MessageError(index, name, "must be a string")
    return v


def _content(c, index):
    if c is None or c == "":
        return []
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    if isinstance(c, list):
        return c
    raise MessageError(index, "content", "must be a string or a list of parts")


def _parse_arguments(s):
    """Returns the JSON value a string of arguments holds, or the string as
    it is when it holds none."""
    def no_constant(name):
        raise ValueError(name)
    t = s.strip()
    if not t:
        return s
    try:
        return json.loads(t, parse_constant=no_constant)
    except ValueError:
        return s


def _tool_calls(calls, index):
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise MessageError(index, "tool_calls", "must be a list")
    out = []
    for c in calls:
        if not isinstance(c, dict):
            raise MessageError(index, "tool_calls", "entries must be JSON objects")
        fn = c.get("function")
        if isinstance(fn, dict):
            # OpenAI: arguments is a string of JSON, parsed when it is JSON.
            args = fn["arguments"] if "arguments" in fn else {}
            if isinstance(args, str):
                args = _parse_arguments(args)
            out.append({"id": _opt_string(c, "id", index), "name": _opt_string(fn, "name", index), "args": args})
        else:
            # LangChain: args are kept as given.
            args = c["args"] if "args" in c else {}
            out.append({"id": _opt_string(c, "id", index), "name": _opt_string(c, "name", index), "args": args})
    return out


def _form(m, index):
    """Returns (fields, role, channel type) of a message in any form."""
    if not isinstance(m, dict):
        raise MessageError(index, "", "must be a JSON object")
    if "role" in m:
        typ = m.get("type")
        if typ is not None and not isinstance(typ, str):
            raise MessageError(index, "type", "must be a string")
        return m, _role(m["role"], index), typ or "chat"
    kind = m.get("type")
    if "lc" in m and kind == "constructor":
        kwargs = m.get("kwargs")
        if not isinstance(kwargs, dict):
            raise MessageError(index, "kwargs", "must be a JSON object")
        path = m.get("id")
        if not isinstance(path, list) or not path or not isinstance(path[-1], str):
            raise MessageError(index, "id", "must be a non-empty list of strings naming the message class")
        return kwargs, _class_role(path[-1], kwargs, index), "chat"
    if isinstance(m.get("data"), dict):
        return m["data"], _stored_role(kind, m["data"], index), "chat"
    raise MessageError(index, "role", "is required (or use a LangChain stored or constructor form)")


def normalize_message(m, index=None):
    """Returns the normalised message whose canonical JSON is digested:
    {"role","id","type","content","tool_calls","tool_call_id","artifact"}."""
    fields, role, typ = _form(m, index)
    _opt_string(fields, "name", index)
    return {
        "role": role,
        "id": _opt_string(fields, "id", index),
        "type": typ,
        "content": _content(fields.get("content"), index),
        "tool_calls": _tool_calls(fields.get("tool_calls"), index),
        "tool_call_id": _opt_string(fields, "tool_call_id", index),
        "artifact": fields.get("artifact"),
    }


def message_digest(m, index=None):
    """Returns the SHA-256 (32 bytes) of the message's canonical normalised form."""
    return hashlib.sha256(canonicalize(normalize_message(m, index))).digest()


def chain(messages, start=CHAIN_START, offset=0):
    """Returns the chain digests c_0 .. c_n (32 bytes each) over messages,
    starting from start (c_0 by default)."""
    c = start
    out = [c]
    for i, m in enumerate(messages):
        c = hashlib.sha256(c + message_digest(m, offset + i)).digest()
        out.append(c)
    return out


def prefix_digest(messages):
    """Returns the chain digest of messages as 64 lowercase hex characters:
    the prefix_digest of an append event at offset len(messages)."""
    return chain(messages)[-1].hex()


def newest_user_index(messages):
    """Returns the index of the newest user message, -1 when there is none:
    the cursor recall reaches once it has processed the history."""
    for i in range(len(messages) - 1, -1, -1):
        fields, role, _ = _form(messages[i], i)
        if role == "user":
            return i
    return -1
