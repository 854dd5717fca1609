"""RFC 8785 JSON Canonicalization Scheme (JCS), written to the RFC.

canonicalize(value) returns the UTF-8 bytes of value serialised as RFC 8785
requires:

- no whitespace;
- object members sorted by the UTF-16 code units of their names;
- strings with only '"', '\\' and U+0000..U+001F escaped: \\b \\t \\n \\f \\r in
  their short forms, the others as \\u00xx with lowercase hex; everything else,
  U+2028 and DEL included, written as it is, in UTF-8;
- numbers as IEEE 754 doubles written as ECMAScript's Number.prototype.toString
  writes them (shortest round-trip digits; 1e+21 and above and below 1e-6 in
  exponent form; -0 as 0).

Values are what json.loads returns: dict (string keys), list, str, int,
float, bool and None. NaN, infinities, integers beyond the range of a double
and strings that are not valid Unicode (lone surrogates) raise ValueError.
"""

import math

__all__ = ["canonicalize", "serialize_number"]

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _escape_char(c):
    short = _SHORT_ESCAPES.get(c)
    if short is not None:
        return short
    if ord(c) < 0x20:
        return "\\u%04x" % ord(c)
    return c


def _serialize_string(s):
    for c in s:
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise ValueError("JCS: a string holds a lone surrogate (not valid Unicode)")
    return '"' + "".join(_escape_char(c) for c in s) + '"'


def serialize_number(x):
    """Returns the ECMAScript Number.prototype.toString form of x as a double."""
    if isinstance(x, bool):
        raise TypeError("a bool is not a number")
    try:
        f = float(x)
    except OverflowError:
        raise ValueError("JCS: %r is beyond the range of an IEEE 754 double" % (x,)) from None
    if math.isnan(f) or math.isinf(f):
        raise ValueError("JCS: NaN and infinities are not JSON")
    if f == 0:
        return "0"  # 0 and -0
    if f < 0:
        return "-" + serialize_number(-f)
    # repr gives the shortest digits that round-trip, as ECMAScript
    # requires; read them and the decimal exponent out of it.
    r = repr(f)
    mantissa, _, exp = r.partition("e")
    exp = int(exp) if exp else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    # The value is 0.digits * 10^n once leading zeros are gone.
    n = len(int_part) + exp
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    if k == 1:
        return digits + "e" + sign + str(abs(e))
    return digits[0] + "." + digits[1:] + "e" + sign + str(abs(e))


def _utf16_key(s):
    return s.encode("utf-16-be", "surrogatepass")


def _serialize(v, out):
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(_serialize_string(v))
    elif isinstance(v, (int, float)):
        out.append(serialize_number(v))
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _serialize(item, out)
        out.append("]")
    elif isinstance(v, dict):
        for k in v:
            if not isinstance(k, str):
                raise TypeError("JCS: object keys must be strings, not %s" % type(k).__name__)
        out.append("{")
        for i, k in enumerate(sorted(v, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_serialize_string(k))
            out.append(":")
            _serialize(v[k], out)
        out.append("}")
    else:
        raise TypeError("JCS: cannot serialise a %s" % type(v).__name__)


def canonicalize(value):
    """Returns the RFC 8785 canonical form of value as UTF-8 bytes."""
    out = []
    _serialize(value, out)
    return "".join(out).encode("utf-8")
