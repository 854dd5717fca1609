"""Checkpoint events: snapshots, appends and deletes."""

import copy
import uuid

from .digest import chain, normalize_message

__all__ = ["SCHEMA", "snapshot_event", "append_event", "delete_event", "validate_key"]

SCHEMA = "recall.checkpoint.v1"
MAX_KEY_BYTES = 256


def validate_key(user_id, conversation_id):
    """Raises ValueError unless both ids are non-empty strings of at most 256
    UTF-8 bytes without NUL."""
    validate_id("user_id", user_id)
    validate_id("conversation_id", conversation_id)


def validate_id(name, v):
    """Raises ValueError, naming the field, unless v is a non-empty string of
    at most 256 UTF-8 bytes without NUL."""
    if not isinstance(v, str) or v == "":
        raise ValueError("%s must be a non-empty string" % name)
    if len(v.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise ValueError("%s is longer than %d bytes" % (name, MAX_KEY_BYTES))
    if "\x00" in v:
        raise ValueError("%s must not contain NUL" % name)


def _new_id(event_id):
    return event_id if event_id is not None else uuid.uuid4().hex


def _check(messages, offset):
    if not isinstance(messages, list):
        raise ValueError("messages must be a list")
    for i, m in enumerate(messages):
        normalize_message(m, offset + i)  # raises MessageError for what recall rejects


def snapshot_event(user_id, conversation_id, history, event_id=None):
    """Returns a snapshot event carrying the whole history (offset 0)."""
    validate_key(user_id, conversation_id)
    _check(history, 0)
    return {
        "schema": SCHEMA, "kind": "snapshot", "event_id": _new_id(event_id),
        "user_id": user_id, "conversation_id": conversation_id,
        "offset": 0, "prefix_digest": None, "messages": list(history),
    }


def append_event(user_id, conversation_id, history, offset, event_id=None):
    """Returns an append event: history[offset:], with the chain digest of
    history[:offset] as its prefix_digest. history is the full history."""
    validate_key(user_id, conversation_id)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or offset > len(history):
        raise ValueError("offset must be an integer between 0 and len(history)")
    if offset == 0:
        return snapshot_event(user_id, conversation_id, history, event_id)
    digests = chain(history[:offset])
    _check(history[offset:], offset)
    return {
        "schema": SCHEMA, "kind": "snapshot", "event_id": _new_id(event_id),
        "user_id": user_id, "conversation_id": conversation_id,
        "offset": offset, "prefix_digest": digests[-1].hex(), "messages": list(history[offset:]),
    }


def delete_event(user_id, conversation_id, event_id=None):
    """Returns a delete event: it deletes the conversation."""
    validate_key(user_id, conversation_id)
    return {
        "schema": SCHEMA, "kind": "delete", "event_id": _new_id(event_id),
        "user_id": user_id, "conversation_id": conversation_id,
    }
