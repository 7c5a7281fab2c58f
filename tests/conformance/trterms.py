"""trterms: the tables and data terms of conformance transcripts.

Binary opcodes, statuses and extras layouts; operands ($var, numbers);
placeholders in expected data ({$c}, {int}, ...); the quoted and hex terms
steps are written in, and how they render and match. run.py documents
the format."""

import re
import struct


# ----------------------------------------------------------------- tables

OPCODES = {
    "get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03, "delete": 0x04,
    "incr": 0x05, "decr": 0x06, "quit": 0x07, "flush": 0x08, "getq": 0x09,
    "noop": 0x0a, "version": 0x0b, "getk": 0x0c, "getkq": 0x0d,
    "append": 0x0e, "prepend": 0x0f, "stat": 0x10, "setq": 0x11,
    "addq": 0x12, "replaceq": 0x13, "deleteq": 0x14, "incrq": 0x15,
    "decrq": 0x16, "quitq": 0x17, "flushq": 0x18, "appendq": 0x19,
    "prependq": 0x1a, "verbosity": 0x1b, "touch": 0x1c, "gat": 0x1d,
    "gatq": 0x1e, "sasl_list_mechs": 0x20, "sasl_auth": 0x21,
    "sasl_step": 0x22, "gatk": 0x23, "gatkq": 0x24,
}
OPCODES["increment"] = OPCODES["incr"]
OPCODES["decrement"] = OPCODES["decr"]
OPCODES["incrementq"] = OPCODES["incrq"]
OPCODES["decrementq"] = OPCODES["decrq"]
OPNAMES = {}
for _n, _v in OPCODES.items():
    OPNAMES.setdefault(_v, _n)

STATUSES = {
    "success": 0x00, "key_enoent": 0x01, "key_eexists": 0x02, "e2big": 0x03,
    "einval": 0x04, "not_stored": 0x05, "delta_badval": 0x06,
    "auth_error": 0x20, "auth_continue": 0x21, "unknown_command": 0x81,
    "enomem": 0x82,
}
STATUS_NAMES = {v: k for k, v in STATUSES.items()}

# Request extras layouts: (field, struct code) in wire order.
_STORE = [("flags", "I"), ("exptime", "I")]
_ARITH = [("delta", "Q"), ("initial", "Q"), ("exptime", "I")]
_TTL = [("exptime", "I")]
REQ_EXTRAS = {}
for _op in ("set", "setq", "add", "addq", "replace", "replaceq"):
    REQ_EXTRAS[OPCODES[_op]] = _STORE
for _op in ("incr", "incrq", "decr", "decrq"):
    REQ_EXTRAS[OPCODES[_op]] = _ARITH
for _op in ("touch", "gat", "gatq", "gatk", "gatkq"):
    REQ_EXTRAS[OPCODES[_op]] = _TTL
REQ_EXTRAS[OPCODES["verbosity"]] = [("level", "I")]
# flush takes an optional exptime: only sent when written.
OPTIONAL_EXTRAS = {OPCODES["flush"]: _TTL, OPCODES["flushq"]: _TTL}
RES_EXTRAS = {}
for _op in ("get", "getq", "getk", "getkq", "gat", "gatq", "gatk", "gatkq"):
    RES_EXTRAS[OPCODES[_op]] = [("flags", "I")]
EXTRA_FIELDS = {"flags", "exptime", "delta", "initial", "level"}

HEADER = struct.Struct(">BBHBBHIIQ")
MAX_BODY = 64 << 20
MAX_WAIT = 10.0


class ParseError(Exception):
    pass


class StepFailure(Exception):
    pass


# -------------------------------------------------------------- operands

_OPERAND = re.compile(r"^(-?\d+|0[xX][0-9a-fA-F]+|\$[A-Za-z_]\w*([+-]\d+)?)$")


def check_operand(text, where):
    if not _OPERAND.match(text):
        raise ParseError("%s: bad number or variable %r" % (where, text))
    return text


def eval_operand(text, env):
    if text.startswith("$"):
        m = re.match(r"^\$([A-Za-z_]\w*)([+-]\d+)?$", text)
        name = m.group(1)
        if name not in env:
            raise StepFailure("variable $%s used before it was captured" % name)
        return env[name] + (int(m.group(2)) if m.group(2) else 0)
    return int(text, 0)


# ----------------------------------------------------------- placeholders

_CMP = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


class Placeholder:
    """One {...} in an expected string or numeric field."""

    def __init__(self, text, where):
        self.text = text
        body = text.strip()
        self.var = None
        self.op = None
        self.operand = None
        self.lo = self.hi = None
        if body.startswith("$") or body.split(" ")[0] in _CMP:
            m = re.match(r"^(\$[A-Za-z_]\w*)?\s*(?:(==|!=|<=|>=|<|>)\s*(\S+))?$",
                         body)
            if not m or (m.group(1) is None and m.group(2) is None):
                raise ParseError("%s: bad placeholder {%s}" % (where, text))
            self.kind = "int"
            self.var = m.group(1)[1:] if m.group(1) else None
            if m.group(2):
                self.op = m.group(2)
                self.operand = check_operand(m.group(3), where)
            self.regex = r"-?\d+"
        elif body == "int" or body.startswith("int:"):
            self.kind = "int"
            self.regex = r"-?\d+"
            if body != "int":
                lo, sep, hi = body[4:].partition("..")
                if not sep:
                    raise ParseError("%s: bad range {%s}" % (where, text))
                self.lo = check_operand(lo, where)
                self.hi = check_operand(hi, where)
        elif body == "num":
            self.kind = "text"
            self.regex = r"-?\d+(?:\.\d+)?"
        elif body == "version":
            self.kind = "text"
            self.regex = r"\d+\.\d+\.\d+[^\s]*"
        elif body == "any":
            self.kind = "text"
            self.regex = r"[^\r\n]*"
        elif body.startswith("re:"):
            self.kind = "text"
            self.regex = body[3:]
            try:
                re.compile(self.regex.encode("latin-1"))
            except re.error as e:
                raise ParseError("%s: bad regex {%s}: %s" % (where, text, e))
        else:
            raise ParseError("%s: unknown placeholder {%s}" % (where, text))

    def check(self, raw, env):
        """raw: the matched bytes or an int. Returns an error or None."""
        if self.kind != "int":
            return None
        value = raw if isinstance(raw, int) else int(raw)
        if self.var is not None:
            if self.var in env:
                if env[self.var] != value:
                    return "$%s is %d, got %d" % (self.var, env[self.var], value)
            else:
                env[self.var] = value
        if self.op is not None:
            other = eval_operand(self.operand, env)
            if not _CMP[self.op](value, other):
                return "%d %s %s (%d) does not hold" % (
                    value, self.op, self.operand, other)
        if self.lo is not None:
            lo, hi = eval_operand(self.lo, env), eval_operand(self.hi, env)
            if not lo <= value <= hi:
                return "%d not in %d..%d" % (value, lo, hi)
        return None

    def __repr__(self):
        return "{%s}" % self.text


# ------------------------------------------------------------------ terms

_ESC = {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0", "\\": b"\\",
        '"': b'"', "{": b"{", "}": b"}", "'": b"'"}


def split_tokens(text, where):
    """Splits on white space outside quotes and braces."""
    tokens, cur, i, depth, quote = [], "", 0, 0, False
    while i < len(text):
        ch = text[i]
        if quote:
            cur += ch
            if ch == "\\" and i + 1 < len(text):
                cur += text[i + 1]
                i += 1
            elif ch == "{":
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
            elif ch == '"' and depth == 0:
                quote = False
        elif ch == '"':
            quote = True
            cur += ch
        elif ch == "{":
            depth += 1
            cur += ch
        elif ch == "}":
            depth = max(0, depth - 1)
            cur += ch
        elif ch.isspace() and depth == 0:
            if cur:
                tokens.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if quote:
        raise ParseError("%s: unterminated string" % where)
    if depth:
        raise ParseError("%s: unbalanced braces" % where)
    if cur:
        tokens.append(cur)
    return tokens


def parse_string(tok, where, allow_ph):
    """Parses one "..." token into a list of bytes and Placeholders."""
    assert tok[0] == '"'
    parts, buf, i, n = [], bytearray(), 1, len(tok)
    while i < n:
        ch = tok[i]
        if ch == "\\":
            if i + 1 >= n:
                raise ParseError("%s: dangling backslash" % where)
            e = tok[i + 1]
            if e == "x":
                try:
                    buf.append(int(tok[i + 2:i + 4], 16))
                except ValueError:
                    raise ParseError("%s: bad \\x escape" % where)
                i += 4
                continue
            if e not in _ESC:
                raise ParseError("%s: unknown escape \\%s" % (where, e))
            buf += _ESC[e]
            i += 2
        elif ch == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if tok[j] == "{":
                    depth += 1
                elif tok[j] == "}":
                    depth -= 1
                j += 1
            if depth:
                raise ParseError("%s: unbalanced braces" % where)
            body = tok[i + 1:j - 1]
            if buf:
                parts.append(bytes(buf))
                buf = bytearray()
            if allow_ph:
                parts.append(Placeholder(body, where))
            else:
                parts.append(("subst", body))
            i = j
        elif ch == '"':
            if i != n - 1:
                raise ParseError("%s: text after closing quote in %s"
                                 % (where, tok))
            i += 1
            break
        else:
            buf += ch.encode("utf-8")
            i += 1
    if buf or not parts:
        parts.append(bytes(buf))
    return parts


def parse_terms(tokens, where, allow_ph):
    """Data terms -> list of parts: bytes, Placeholder, ('subst', text) or
    ('int', width, operand)."""
    parts = []
    for tok in tokens:
        for sub in _split_plus(tok):
            parts.extend(parse_term(sub, where, allow_ph))
    return parts


def _split_plus(tok):
    out, cur, quote, depth, i = [], "", False, 0, 0
    while i < len(tok):
        ch = tok[i]
        if quote and ch == "\\":
            cur += tok[i:i + 2]
            i += 2
            continue
        if ch == '"':
            quote = not quote
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "+" and not quote and depth == 0 and cur and \
                not re.match(r"^u(8|16|32|64):\$\w+$", cur):
            out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    out.append(cur)
    return out


def parse_term(tok, where, allow_ph):
    if tok.startswith('"'):
        m = re.match(r'^(".*")\*(\d+)$', tok, re.S)
        if m:
            parts = parse_string(m.group(1), where, False)
            if len(parts) != 1 or not isinstance(parts[0], bytes):
                raise ParseError("%s: a repeated string takes no placeholders"
                                 % where)
            return [parts[0] * int(m.group(2))]
        return parse_string(tok, where, allow_ph)
    if tok.startswith('x"') and tok.endswith('"'):
        hexs = re.sub(r"\s+", "", tok[2:-1])
        try:
            return [bytes.fromhex(hexs)]
        except ValueError:
            raise ParseError("%s: bad hex %s" % (where, tok))
    m = re.match(r"^u(8|16|32|64):(.+)$", tok)
    if m:
        return [("int", int(m.group(1)) // 8, check_operand(m.group(2), where))]
    raise ParseError("%s: not a data term: %s" % (where, tok))


_FMT = {1: ">B", 2: ">H", 4: ">I", 8: ">Q"}


def render(parts, env):
    """Parts -> bytes for sending (placeholders are not allowed)."""
    out = bytearray()
    for p in parts:
        if isinstance(p, bytes):
            out += p
        elif isinstance(p, tuple) and p[0] == "subst":
            body = p[1].strip()
            if not re.match(r"^\$[A-Za-z_]\w*([+-]\d+)?$", body):
                raise StepFailure("cannot substitute {%s}" % body)
            out += str(eval_operand(body, env)).encode()
        elif isinstance(p, tuple) and p[0] == "int":
            v = eval_operand(p[2], env) % (1 << (8 * p[1]))
            out += struct.pack(_FMT[p[1]], v)
        else:
            raise StepFailure("placeholder %r in data to send" % (p,))
    return bytes(out)


def has_placeholder(parts):
    return any(isinstance(p, Placeholder) for p in parts)


def literal(parts, env):
    """Parts of an expectation without placeholders -> bytes."""
    return render(parts, env)


def pattern_of(parts, env):
    """Parts -> (compiled regex, [placeholders in group order])."""
    rx, phs = b"", []
    for p in parts:
        if isinstance(p, Placeholder):
            rx += b"(" + p.regex.encode("latin-1") + b")"
            phs.append(p)
        else:
            rx += re.escape(render([p], env))
    return re.compile(rx, re.S), phs


def match_parts(parts, data, env):
    """Matches data (bytes) against parts whole. Returns an error or None.
    Variables are only bound when the whole match succeeds."""
    if not has_placeholder(parts):
        want = literal(parts, env)
        return None if data == want else "differs"
    rx, phs = pattern_of(parts, env)
    m = rx.fullmatch(data)
    if not m:
        return "does not match"
    trial = dict(env)
    for ph, g in zip(phs, m.groups()):
        err = ph.check(g, trial)
        if err:
            return err
    env.clear()
    env.update(trial)
    return None


def show(parts):
    out = ""
    for p in parts:
        if isinstance(p, bytes):
            out += shorten(p)
        elif isinstance(p, Placeholder):
            out += repr(p)
        elif p[0] == "subst":
            out += "{%s}" % p[1]
        else:
            out += "u%d:%s" % (p[1] * 8, p[2])
    return out


def shorten(b, limit=160):
    s = repr(bytes(b))[2:-1]
    if len(s) > limit:
        s = s[:limit - 40] + "...(%d bytes)..." % len(b) + s[-30:]
    return s


def split_lines(parts):
    """Splits expectation parts into segments each ending with LF."""
    segs, cur = [], []
    for p in parts:
        if isinstance(p, bytes):
            while b"\n" in p:
                head, _, p = p.partition(b"\n")
                cur.append(head + b"\n")
                segs.append(cur)
                cur = []
            if p:
                cur.append(p)
        else:
            cur.append(p)
    if cur:
        segs.append(cur)
    return segs
