"""recall_client: publish conversation checkpoints to recall and read the
evidence it keeps, with the standard library alone.

    from recall_client import Client
    recall = Client(os.environ["RECALL_API_URL"], os.environ["RECALL_TOKEN"])
    recall.publish("u-42", "c-7", history)          # after each turn
    ev = recall.evidence("u-42", "c-7")            # before the next call
    prompt = [system] + ([ev["message"]] if ev["message"] else []) + history[ev["cursor"]:]

Messages may be flat ({"role","content",…}), LangChain stored
(messages_to_dict) or LangChain constructor (dumpd) dicts.
"""

from .client import Client, RecallError
from .digest import (CHAIN_START, MessageError, chain, message_digest, newest_user_index,
                     normalize_message, prefix_digest)
from .events import SCHEMA, append_event, delete_event, snapshot_event
from .jcs import canonicalize
from .token import SERVICE_SCOPE, sign_token

__all__ = [
    "Client", "RecallError", "MessageError",
    "SCHEMA", "snapshot_event", "append_event", "delete_event",
    "CHAIN_START", "normalize_message", "message_digest", "chain", "prefix_digest", "newest_user_index",
    "canonicalize", "sign_token", "SERVICE_SCOPE",
]
