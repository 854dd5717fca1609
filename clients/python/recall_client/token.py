"""HS256 bearer tokens for recall's API, signed with RECALL_JWT_SECRET."""

import base64
import hashlib
import hmac
import json
import time

__all__ = ["SERVICE_SCOPE", "sign_token"]

SERVICE_SCOPE = "recall:service"


def _b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=")


def sign_token(secret, sub, ttl=3600, service=False):
    """Returns an HS256 JWT for user sub that expires in ttl seconds; with
    service=True it carries the recall:service scope and acts for any user.
    Keep the secret on your backend: hand out only user tokens."""
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    now = int(time.time())
    claims = {"sub": sub, "iat": now, "exp": now + int(ttl)}
    if service:
        claims["scope"] = SERVICE_SCOPE
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = header + b"." + payload
    sig = _b64(hmac.new(secret, signing_input, hashlib.sha256).digest())
    return (signing_input + b"." + sig).decode("ascii")
