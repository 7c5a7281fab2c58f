#!/usr/bin/env python3
"""Conformance transcript runner: replays memcached protocol exchanges.

    run.py [options] HOST:PORT FILE...
    run.py --list FILE...

Each transcript FILE is run on fresh connections to HOST:PORT; one line is
printed per transcript (PASS, FAIL with the first difference, or SKIP when
the transcript needs a server mode other than --mode).  The exit status is
0 when nothing failed, 1 when a transcript failed, 2 on a usage or parse
error.  Standard library only.

Options:
  --mode MODE    the mode the server at HOST:PORT was started in (plain,
                 textauth, sasl, maxconns; default plain).  Transcripts that
                 declare another mode are skipped.
  --timeout S    default deadline for each expected reply (default 5 s).
  --list         print the parsed steps of each transcript and exit.
  -v             print every step as it runs, with the bytes received.

TRANSCRIPT FORMAT
=================

A transcript is a UTF-8 text file read line by line.  A line whose first
non-blank character is '#' is a comment; blank lines are ignored.  A line
that starts with white space continues the step above it (used for the
checks of expect-stats / expect-lines and for long binary frames).

Directives (anywhere, usually at the top):

  mode NAME          server mode the transcript needs: plain (default),
                     textauth (-Y authfile), sasl (-S), maxconns (-c small).
  timeout SECONDS    per-expectation deadline for this transcript.
  fresh              the transcript wants a server nothing else has used
                     (it compares counters that background work on other
                     transcripts' items would move). run.py warns when it
                     is not the first transcript it runs.

Steps:

  conn NAME          switch to connection NAME, opening it first if it is not
                     open.  Steps before any 'conn' use the connection "main".
  close [NAME]       the client closes the connection (default: current).
  send TERMS         send bytes.
  expect TERMS       expect exactly these bytes (text and meta protocol);
                     string terms may contain placeholders, see below.
  send-bin OP FIELD=VALUE...     send one binary-protocol request frame.
  expect-bin OP FIELD=VALUE...   expect one binary-protocol response frame.
  expect-stats [bin] [opaque=N]  read a stats reply and check it (below).
  expect-lines UNTIL-TERM        read lines up to and including the line
                     UNTIL-TERM (a string term) and check them (below).
  expect-closed      the server closes the connection (EOF or reset) without
                     sending anything more.
  cork / uncork      between the two, what the steps send on the current
                     connection is kept and then sent in one write (for
                     pipelines the server must see together).
  wait SECONDS       sleep, at most 10 s: only for a TTL or a flush delay
                     that must elapse on the server's clock.
  poll SECONDS       run the next two steps (a send and an expect-stats or
                     expect-lines) again every 50 ms until the expectation
                     holds, at most SECONDS (for state the server changes
                     in the background, such as items moving between LRUs).
  fill-conns MAX TERMS
                     open new connections (kept open until the transcript
                     ends) until the server refuses one by sending TERMS and
                     closing it; fails if MAX are accepted.  A connection
                     counts as accepted when it answers "version".
  close-filled       close the connections fill-conns opened.
  await-accept NAME SECONDS
                     connect as NAME, retrying until the server accepts the
                     connection (it answers "version"), within SECONDS.

Data terms (TERMS is a sequence of these, concatenated):

  "text"      bytes, with escapes \\r \\n \\t \\0 \\\\ \\" \\xHH and \\{ \\}
              (literal braces).  Nothing is implicit: write \\r\\n.
  "text"*N    the string repeated N times (no placeholders).
  x"80 0a"    bytes in hex, white space ignored.
  u8:N u16:N u32:N u64:N
              a big-endian integer; N may be decimal, 0x hex or $var[+-K].
In 'send' strings, {$var} and {$var+K} / {$var-K} are replaced by the
variable's decimal value.

Placeholders (in expected strings, and as binary field values):

  {$name}            a (possibly negative) decimal integer.  The first time
                     $name is seen the value is captured; later it must be
                     equal.
  {$name OP X}       capture/compare as above, and require value OP X, where
                     OP is one of == != < <= > >= and X is an integer or
                     $var[+-K].  {OP X} does the same without capturing.
  {int}              any decimal integer; {int:LO..HI} within LO..HI
                     (inclusive; LO and HI may be $var[+-K]).
  {num}              a decimal number, optionally with a fractional part.
  {version}          a version string: digits.digits.digits then non-space.
  {any}              any run of bytes other than CR and LF (may be empty).
  {re:REGEX}         a Python regular expression (braces must balance).
Expected text is matched line by line: every line that contains a
placeholder is read up to its LF and matched whole; literal lines are
compared byte for byte.

Binary frames.  OP is a command name (get getq getk getkq set setq add addq
replace replaceq delete deleteq incr incrq decr decrq quit quitq flush flushq
noop version append appendq prepend prependq stat verbosity touch gat gatq
gatk gatkq sasl_list_mechs sasl_auth sasl_step) or a number (0x44).  Fields:

  key=T value=T extras=T   the body parts (T is one or more terms joined with
                           '+', e.g. value="x"*100+"\\r\\n").
  flags= exptime= delta= initial= level=
                           named extras, laid out for OP: storage ops take
                           flags,exptime; incr/decr delta,initial,exptime;
                           touch/gat/gatk(q) exptime; flush(q) exptime (only
                           when given); verbosity level; get-family
                           responses flags.  A request whose OP has fixed
                           extras gets them (zero-filled) unless extras= is
                           given.
  opaque= cas= magic= datatype= vbucket=
                           header fields (magic takes req, res or a number;
                           vbucket is the request's reserved field).
  keylen= extlen= bodylen= (send-bin only) override the computed lengths,
                           to send malformed frames.
  status=NAME              (expect-bin only) success key_enoent key_eexists
                           e2big einval not_stored delta_badval auth_error
                           auth_continue unknown_command enomem, or a number.
In expect-bin every field not written must be zero or empty (status must be
success, magic 0x81) so that a frame is checked whole.  Numeric fields take
a number, $var (capture/compare) or a placeholder such as cas={int} or
cas={$c2 != $c1}.  key= and value= strings may contain placeholders; such a
value is matched whole as a regular expression.

Quiet commands: a quiet request produces no reply, which a transcript
states by pipelining a noop (or mn) after it and expecting the noop's reply
next: any reply to the quiet command would come first and fail the step.

expect-stats reads "STAT name value" lines up to "END" (text), or binary
stat frames up to the one with an empty key (bin; each frame must be
opcode stat, status success and carry the given opaque).  Its continuation
lines each hold one check:

  NAME TYPE [-> $var]        present; TYPE is int, num, bool (0/1, yes/no,
                             on/off), str, version, any.  -> captures an int.
  NAME = VALUE               present with exactly VALUE (rest of line).
  NAME in LO..HI             present, an integer within LO..HI.
  absent NAME                not present.
  match REGEX TYPE           some key matches REGEX, and every key that
                             matches has a value of TYPE.
  all REGEX                  every key matches REGEX.
  count N | count LO..HI     the number of stats.

expect-lines reads lines until the UNTIL-TERM line; its checks are:

  each TERMS                 every line before the last matches TERMS.
  has TERMS                  some line matches TERMS.
  count N | count LO..HI     the number of lines before the last.

At the end of a transcript every open connection must have nothing unread.
"""

import os
import re
import select
import socket
import struct
import sys
import time

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


# ------------------------------------------------------------------ steps

class Step:
    def __init__(self, kind, line, text):
        self.kind = kind
        self.line = line
        self.text = text
        self.checks = []

    def __str__(self):
        return "line %d: %s" % (self.line, self.text)


class Transcript:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.mode = "plain"
        self.timeout = None
        self.fresh = False
        self.steps = []
        self.parse()
        self.validate()

    def parse(self):
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for no, raw in enumerate(lines, 1):
            if not raw.strip() or raw.strip().startswith("#"):
                continue
            where = "%s:%d" % (self.path, no)
            if raw[0] in " \t":
                if not self.steps or self.steps[-1].kind not in (
                        "expect-stats", "expect-lines", "send-bin",
                        "expect-bin"):
                    raise ParseError("%s: continuation line with no step "
                                     "to continue" % where)
                st = self.steps[-1]
                if st.kind in ("send-bin", "expect-bin"):
                    st.text += " " + raw.strip()
                    self._parse_bin(st, where)
                else:
                    st.checks.append(self._parse_check(st, raw.strip(), where))
                continue
            word, _, rest = raw.strip().partition(" ")
            rest = rest.strip()
            if word == "mode":
                self.mode = rest
                continue
            if word == "timeout":
                self.timeout = float(rest)
                continue
            if word == "fresh":
                self.fresh = True
                continue
            st = Step(word, no, raw.strip())
            st.where = where
            if word in ("conn", "close"):
                st.arg = rest or None
                if word == "conn" and not rest:
                    raise ParseError("%s: conn needs a name" % where)
            elif word == "send":
                st.parts = parse_terms(split_tokens(rest, where), where, False)
            elif word == "expect":
                st.parts = parse_terms(split_tokens(rest, where), where, True)
                if not st.parts:
                    raise ParseError("%s: expect needs data" % where)
            elif word in ("send-bin", "expect-bin"):
                self._parse_bin(st, where)
            elif word == "expect-stats":
                toks = split_tokens(rest, where)
                st.binary = "bin" in toks
                st.opaque = "0"
                for t in toks:
                    if t.startswith("opaque="):
                        st.opaque = check_operand(t[7:], where)
                    elif t != "bin":
                        raise ParseError("%s: expect-stats takes [bin] "
                                         "[opaque=N]" % where)
            elif word == "expect-lines":
                st.until = parse_terms(split_tokens(rest, where), where, True)
            elif word in ("expect-closed", "close-filled", "cork", "uncork"):
                if rest:
                    raise ParseError("%s: %s takes no argument" % (where, word))
            elif word == "wait":
                try:
                    st.seconds = float(rest)
                except ValueError:
                    raise ParseError("%s: wait SECONDS" % where)
                if not 0 < st.seconds <= MAX_WAIT:
                    raise ParseError("%s: wait is bounded to %g s"
                                     % (where, MAX_WAIT))
            elif word == "fill-conns":
                toks = split_tokens(rest, where)
                if len(toks) < 2 or not toks[0].isdigit():
                    raise ParseError("%s: fill-conns MAX TERMS" % where)
                st.max = int(toks[0])
                st.parts = parse_terms(toks[1:], where, True)
            elif word == "poll":
                try:
                    st.seconds = float(rest)
                except ValueError:
                    raise ParseError("%s: poll SECONDS" % where)
                if not 0 < st.seconds <= 60:
                    raise ParseError("%s: poll is bounded to 60 s" % where)
            elif word == "await-accept":
                toks = rest.split()
                if len(toks) != 2:
                    raise ParseError("%s: await-accept NAME SECONDS" % where)
                st.arg, st.seconds = toks[0], float(toks[1])
                if st.seconds > 60:
                    raise ParseError("%s: await-accept is bounded to 60 s"
                                     % where)
            else:
                raise ParseError("%s: unknown step %r" % (where, word))
            self.steps.append(st)

    def validate(self):
        for i, st in enumerate(self.steps):
            if st.kind != "poll":
                continue
            pair = self.steps[i + 1:i + 3]
            if len(pair) != 2 or pair[0].kind not in ("send", "send-bin") or \
                    pair[1].kind not in ("expect-stats", "expect-lines"):
                raise ParseError("%s: poll must be followed by a send and an "
                                 "expect-stats or expect-lines" % st.where)

    def _parse_bin(self, st, where):
        toks = split_tokens(st.text.partition(" ")[2], where)
        if not toks:
            raise ParseError("%s: %s needs an opcode" % (where, st.kind))
        op = toks[0].lower()
        if op in OPCODES:
            st.opcode = OPCODES[op]
        else:
            try:
                st.opcode = int(op, 0)
            except ValueError:
                raise ParseError("%s: unknown opcode %s" % (where, op))
        st.fields = {}
        sending = st.kind == "send-bin"
        allowed = {"key", "value", "extras", "opaque", "cas", "magic",
                   "datatype", "vbucket"} | EXTRA_FIELDS
        allowed |= {"keylen", "extlen", "bodylen"} if sending else {"status"}
        for t in toks[1:]:
            name, eq, val = t.partition("=")
            if not eq or name not in allowed:
                raise ParseError("%s: bad field %r for %s" % (where, t, st.kind))
            if name in st.fields:
                raise ParseError("%s: field %s given twice" % (where, name))
            if name in ("key", "value", "extras"):
                st.fields[name] = parse_terms([val], where, not sending)
            elif name == "magic":
                st.fields[name] = {"req": "0x80", "res": "0x81"}.get(
                    val) or _num_field(val, where, False)
            elif name == "status":
                if val.lower() in STATUSES:
                    st.fields[name] = STATUSES[val.lower()]
                else:
                    try:
                        st.fields[name] = int(val, 0)
                    except ValueError:
                        raise ParseError("%s: unknown status %s" % (where, val))
            else:
                st.fields[name] = _num_field(val, where, not sending)
        if sending and "extras" in st.fields and \
                EXTRA_FIELDS & set(st.fields):
            raise ParseError("%s: extras= and named extras together" % where)

    def _parse_check(self, st, text, where):
        if st.kind == "expect-lines":
            word, _, rest = text.partition(" ")
            if word in ("each", "has"):
                return (word, parse_terms(split_tokens(rest, where), where,
                                          True))
            if word == "count":
                return ("count",) + _range(rest, where)
            raise ParseError("%s: expect-lines checks: each, has, count"
                             % where)
        toks = text.split()
        if toks[0] == "absent" and len(toks) == 2:
            return ("absent", toks[1])
        if toks[0] == "count" and len(toks) == 2:
            return ("count",) + _range(toks[1], where)
        if toks[0] == "all" and len(toks) == 2:
            return ("all", re.compile(toks[1]))
        if toks[0] == "match" and len(toks) == 3:
            _type_check(toks[2], where)
            return ("match", re.compile(toks[1]), toks[2])
        if len(toks) >= 3 and toks[1] == "=":
            return ("eq", toks[0], text.split("=", 1)[1].strip())
        if len(toks) == 3 and toks[1] == "in":
            return ("in", toks[0]) + _range(toks[2], where)
        if len(toks) in (2, 4):
            _type_check(toks[1], where)
            cap = None
            if len(toks) == 4:
                if toks[2] != "->" or not re.match(r"^\$\w+$", toks[3]):
                    raise ParseError("%s: bad capture %s" % (where, text))
                cap = toks[3][1:]
            return ("type", toks[0], toks[1], cap)
        raise ParseError("%s: bad stats check %r" % (where, text))


def _num_field(val, where, allow_ph):
    if val.startswith("{"):
        if not allow_ph or not val.endswith("}"):
            raise ParseError("%s: placeholder not allowed here: %s"
                             % (where, val))
        return Placeholder(val[1:-1], where)
    return check_operand(val, where)


def _range(text, where):
    lo, sep, hi = text.partition("..")
    if not sep:
        return (check_operand(text, where), check_operand(text, where))
    return (check_operand(lo, where), check_operand(hi, where))


_TYPES = {
    "int": re.compile(r"^-?\d+$"),
    "num": re.compile(r"^-?\d+(\.\d+)?$"),
    "bool": re.compile(r"^(0|1|yes|no|on|off|true|false)$"),
    "str": re.compile(r"^.+$", re.S),
    "version": re.compile(r"^\d+\.\d+\.\d+\S*$"),
    "any": re.compile(r"^.*$", re.S),
}


def _type_check(name, where):
    if name not in _TYPES:
        raise ParseError("%s: unknown type %s (int num bool str version any)"
                         % (where, name))


# ------------------------------------------------------------- connection

class Conn:
    def __init__(self, addr, name, timeout):
        self.name = name
        self.buf = bytearray()
        self.eof = False
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.last_sent = b""
        self.corked = None

    def send(self, data):
        if self.corked is not None:
            self.corked += data
            self.last_sent = bytes(self.corked)
            return
        self.last_sent = data
        self.sock.sendall(data)

    def uncork(self):
        data, self.corked = bytes(self.corked or b""), None
        if data:
            self.sock.sendall(data)
            self.last_sent = data

    def _fill(self, deadline):
        if self.eof:
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            return False
        try:
            d = self.sock.recv(1 << 20)
        except ConnectionResetError:
            d = b""
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def read_exact(self, n, deadline):
        while len(self.buf) < n:
            if not self._fill(deadline):
                break
        got = bytes(self.buf[:n])
        del self.buf[:n]
        return got

    def read_line(self, deadline, limit=MAX_BODY):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                got = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                return got
            if len(self.buf) >= limit:
                got = bytes(self.buf[:limit])
                del self.buf[:limit]
                return got
            if not self._fill(deadline):
                got = bytes(self.buf)
                self.buf.clear()
                return got

    def peek_more(self, wait=0.2):
        """After a mismatch: whatever else arrives shortly, for the report."""
        end = time.monotonic() + wait
        while len(self.buf) < 512 and self._fill(end):
            if b"\n" in self.buf:
                break
        return bytes(self.buf[:512])

    def state(self):
        return " (connection closed by server)" if self.eof else ""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ----------------------------------------------------------------- runner

class Runner:
    def __init__(self, addr, transcript, timeout, verbose):
        self.addr = addr
        self.t = transcript
        self.timeout = transcript.timeout or timeout
        self.verbose = verbose
        self.conns = {}
        self.cur = None
        self.env = {}
        self.filled = []

    def log(self, msg):
        if self.verbose:
            print("    " + msg)

    def conn(self):
        if self.cur is None:
            self.switch("main")
        return self.conns[self.cur]

    def switch(self, name):
        if name not in self.conns:
            try:
                self.conns[name] = Conn(self.addr, name, self.timeout)
            except OSError as e:
                raise StepFailure("cannot connect %s: %s" % (name, e))
        self.cur = name

    def fail(self, step, expected, got, why=""):
        c = self.conns.get(self.cur)
        sent = shorten(c.last_sent) if c else ""
        msg = "%s [conn %s]\n      sent:     %s\n      expected: %s\n" \
              "      got:      %s%s" % (step, self.cur, sent, expected, got,
                                        c.state() if c else "")
        if why:
            msg += "\n      why:      " + why
        raise StepFailure(msg)

    def run(self):
        try:
            steps = self.t.steps
            i = 0
            while i < len(steps):
                st = steps[i]
                self.log(str(st))
                if st.kind == "poll":
                    self.do_poll(st, steps[i + 1:i + 3])
                    i += 3
                    continue
                self.do(st)
                i += 1
            self.check_quiet()
        finally:
            for c in list(self.conns.values()) + self.filled:
                c.close()

    def check_quiet(self):
        for name, c in self.conns.items():
            if c.buf:
                self.cur = name
                self.fail("end of transcript", "nothing more",
                          shorten(c.buf), "unexpected unread reply")
            if not c.eof:
                r, _, _ = select.select([c.sock], [], [], 0.05)
                if r:
                    try:
                        d = c.sock.recv(4096)
                    except OSError:
                        d = b""
                    if d:
                        self.cur = name
                        self.fail("end of transcript", "nothing more",
                                  shorten(d), "unexpected unread reply")

    def do(self, st):
        getattr(self, "do_" + st.kind.replace("-", "_"))(st)

    def do_poll(self, st, pair):
        deadline = time.monotonic() + st.seconds
        while True:
            try:
                for p in pair:
                    self.log("  (poll) " + str(p))
                    self.do(p)
                return
            except StepFailure:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    # -- steps
    def do_cork(self, st):
        self.conn().corked = bytearray()

    def do_uncork(self, st):
        c = self.conn()
        if c.corked is None:
            raise StepFailure("%s: the connection is not corked" % st)
        try:
            c.uncork()
        except OSError as e:
            self.fail(st, "to send", "error %s" % e)

    def do_conn(self, st):
        self.switch(st.arg)

    def do_close(self, st):
        name = st.arg or self.cur or "main"
        c = self.conns.pop(name, None)
        if c is None:
            raise StepFailure("%s: no open connection %s" % (st, name))
        c.close()
        if self.cur == name:
            self.cur = None

    def do_send(self, st):
        data = render(st.parts, self.env)
        c = self.conn()
        try:
            c.send(data)
        except OSError as e:
            self.fail(st, "to send %s" % shorten(data), "error %s" % e)
        self.log("sent %s" % shorten(data))

    def do_expect(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        got_all = b""
        for seg in split_lines(st.parts):
            if has_placeholder(seg):
                got = c.read_line(deadline)
            else:
                want = literal(seg, self.env)
                if want.endswith(b"\n"):
                    got = c.read_line(deadline, len(want))
                else:
                    got = c.read_exact(len(want), deadline)
            got_all += got
            err = match_parts(seg, got, self.env)
            if err:
                more = b"" if got.endswith(b"\n") else c.peek_more()
                self.fail(st, show(st.parts), shorten(got_all + more),
                          "at %s: %s" % (shorten(got), err) if got else
                          "nothing received before the deadline")
        self.log("got  %s" % shorten(got_all))

    def do_expect_closed(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        if not c.buf:
            c._fill(deadline)
        if c.buf:
            self.fail(st, "connection closed", shorten(c.peek_more()))
        if not c.eof:
            self.fail(st, "connection closed",
                      "connection still open after %gs" % self.timeout)
        self.log("closed")

    def do_wait(self, st):
        time.sleep(st.seconds)

    # -- binary
    def _extras(self, st, layout, env):
        out = b""
        for name, code in layout:
            v = st.fields.get(name, "0")
            val = eval_operand(v, env)
            out += struct.pack(">" + code, val % (1 << (8 * struct.calcsize(
                ">" + code))))
        return out

    def do_send_bin(self, st):
        f, env, op = st.fields, self.env, st.opcode
        key = render(f.get("key", []), env)
        value = render(f.get("value", []), env)
        if "extras" in f:
            extras = render(f["extras"], env)
        elif op in REQ_EXTRAS:
            extras = self._extras(st, REQ_EXTRAS[op], env)
        elif op in OPTIONAL_EXTRAS and "exptime" in f:
            extras = self._extras(st, OPTIONAL_EXTRAS[op], env)
        else:
            for n in EXTRA_FIELDS & set(f):
                raise StepFailure("%s: %s is not an extra of opcode 0x%02x"
                                  % (st, n, op))
            extras = b""
        num = lambda n, d: eval_operand(f[n], env) if n in f else d
        frame = HEADER.pack(
            num("magic", 0x80), op, num("keylen", len(key)),
            num("extlen", len(extras)), num("datatype", 0),
            num("vbucket", 0),
            num("bodylen", len(key) + len(extras) + len(value)),
            num("opaque", 0), num("cas", 0) % (1 << 64))
        frame += extras + key + value
        c = self.conn()
        try:
            c.send(frame)
        except OSError as e:
            self.fail(st, "to send", "error %s" % e)
        self.log("sent %s" % shorten(frame))

    def read_frame(self, st, c, deadline):
        hdr = c.read_exact(24, deadline)
        if len(hdr) < 24:
            self.fail(st, describe_expect(st), shorten(hdr) or "nothing",
                      "short header")
        fr = dict(zip(("magic", "opcode", "keylen", "extlen", "datatype",
                       "status", "bodylen", "opaque", "cas"),
                      HEADER.unpack(hdr)))
        if fr["bodylen"] > MAX_BODY or \
                fr["keylen"] + fr["extlen"] > fr["bodylen"]:
            self.fail(st, describe_expect(st), describe_frame(fr),
                      "bad lengths in response header")
        body = c.read_exact(fr["bodylen"], deadline)
        if len(body) < fr["bodylen"]:
            self.fail(st, describe_expect(st), describe_frame(fr),
                      "body cut short (%d of %d bytes)"
                      % (len(body), fr["bodylen"]))
        e, k = fr["extlen"], fr["keylen"]
        fr["extras"], fr["key"], fr["value"] = body[:e], body[e:e + k], \
            body[e + k:]
        return fr

    def do_expect_bin(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        fr = self.read_frame(st, c, deadline)
        self.log("got  %s" % describe_frame(fr))
        f = st.fields
        trial = dict(self.env)

        def num(name, default):
            want = f.get(name)
            got = fr[name]
            if want is None:
                return None if got == default else \
                    "%s is %s, expected %s" % (name, got, default)
            if isinstance(want, Placeholder):
                err = want.check(got, trial)
                return None if err is None else "%s: %s" % (name, err)
            if want.startswith("$") and re.match(r"^\$\w+$", want) and \
                    want[1:] not in trial:
                trial[want[1:]] = got
                return None
            w = eval_operand(want, trial)
            return None if w == got else "%s is %s, expected %s" % (
                name, got, w)

        checks = [
            ("magic", lambda: num("magic", 0x81)),
            ("opcode", lambda: None if fr["opcode"] == st.opcode else
             "opcode is %s, expected %s" % (opname(fr["opcode"]),
                                            opname(st.opcode))),
            ("status", lambda: None if fr["status"] == f.get("status", 0) else
             "status is %s, expected %s" % (stname(fr["status"]),
                                            stname(f.get("status", 0)))),
            ("opaque", lambda: num("opaque", 0)),
            ("datatype", lambda: num("datatype", 0)),
            ("cas", lambda: num("cas", 0)),
        ]
        for _, chk in checks:
            err = chk()
            if err:
                self.fail(st, describe_expect(st), describe_frame(fr), err)
        # extras
        if "extras" in f:
            err = match_parts(f["extras"], fr["extras"], trial)
            if err:
                self.fail(st, describe_expect(st), describe_frame(fr),
                          "extras " + err)
        elif EXTRA_FIELDS & set(f):
            layout = RES_EXTRAS.get(st.opcode, [("flags", "I")])
            size = sum(struct.calcsize(">" + c) for _, c in layout)
            if len(fr["extras"]) != size:
                self.fail(st, describe_expect(st), describe_frame(fr),
                          "extras are %d bytes, expected %d"
                          % (len(fr["extras"]), size))
            off = 0
            for name, code in layout:
                sz = struct.calcsize(">" + code)
                got = struct.unpack(">" + code, fr["extras"][off:off + sz])[0]
                off += sz
                want = f.get(name, "0")
                if isinstance(want, Placeholder):
                    err = want.check(got, trial)
                elif want.startswith("$") and want[1:] not in trial:
                    trial[want[1:]] = got
                    err = None
                else:
                    w = eval_operand(want, trial)
                    err = None if w == got else "%s is %d, expected %d" % (
                        name, got, w)
                if err:
                    self.fail(st, describe_expect(st), describe_frame(fr), err)
        elif fr["extras"]:
            self.fail(st, describe_expect(st), describe_frame(fr),
                      "unexpected extras")
        for part in ("key", "value"):
            err = match_parts(f.get(part, [b""]), fr[part], trial)
            if err:
                self.fail(st, describe_expect(st), describe_frame(fr),
                          "%s %s" % (part, err))
        self.env.clear()
        self.env.update(trial)

    # -- stats
    def do_expect_stats(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        stats, order = {}, []
        if st.binary:
            opq = eval_operand(st.opaque, self.env)
            while True:
                fr = self.read_frame(st, c, deadline)
                if fr["magic"] != 0x81 or fr["opcode"] != OPCODES["stat"] or \
                        fr["status"] != 0 or fr["opaque"] != opq or \
                        fr["extras"] or fr["cas"]:
                    self.fail(st, "stat frames (status success, opaque %d)"
                              % opq, describe_frame(fr))
                if not fr["key"]:
                    if fr["value"]:
                        self.fail(st, "an empty terminating frame",
                                  describe_frame(fr))
                    break
                k = fr["key"].decode("latin-1")
                stats[k] = fr["value"].decode("latin-1")
                order.append(k)
        else:
            while True:
                line = c.read_line(deadline)
                if line == b"END\r\n":
                    break
                m = re.match(rb"^STAT (\S+) (.*)\r\n$", line, re.S)
                if not m:
                    self.fail(st, "STAT name value\\r\\n ... END\\r\\n",
                              shorten(line + c.peek_more()),
                              "after %d stats" % len(order))
                k = m.group(1).decode("latin-1")
                stats[k] = m.group(2).decode("latin-1")
                order.append(k)
        self.log("got  %d stats" % len(order))
        for chk in st.checks:
            err = self.stat_check(chk, stats, order)
            if err:
                self.fail(st, "stats check: " + " ".join(
                    str(x) for x in chk if x is not None),
                    "%d stats%s" % (len(order), ""), err)

    def stat_check(self, chk, stats, order):
        kind = chk[0]
        env = self.env
        if kind == "absent":
            return None if chk[1] not in stats else \
                "%s is present (%s)" % (chk[1], stats[chk[1]])
        if kind == "count":
            lo, hi = eval_operand(chk[1], env), eval_operand(chk[2], env)
            return None if lo <= len(order) <= hi else \
                "count %d not in %d..%d" % (len(order), lo, hi)
        if kind == "all":
            bad = [k for k in order if not chk[1].fullmatch(k)]
            return None if not bad else "keys not matching: %s" % bad[:5]
        if kind == "match":
            keys = [k for k in order if chk[1].fullmatch(k)]
            if not keys:
                return "no key matches %s" % chk[1].pattern
            bad = [k for k in keys if not _TYPES[chk[2]].match(stats[k])]
            return None if not bad else "%s = %r is not %s" % (
                bad[0], stats[bad[0]], chk[2])
        name = chk[1]
        if name not in stats:
            return "%s is missing" % name
        val = stats[name]
        if kind == "eq":
            want = chk[2]
            if re.match(r"^\$\w+([+-]\d+)?$", want):
                want = str(eval_operand(want, env))
            return None if val == want else "%s is %r, expected %r" % (
                name, val, want)
        if kind == "in":
            if not _TYPES["int"].match(val):
                return "%s = %r is not an integer" % (name, val)
            lo, hi = eval_operand(chk[2], env), eval_operand(chk[3], env)
            return None if lo <= int(val) <= hi else \
                "%s = %s not in %d..%d" % (name, val, lo, hi)
        if kind == "type":
            if not _TYPES[chk[2]].match(val):
                return "%s = %r is not %s" % (name, val, chk[2])
            if chk[3]:
                if not _TYPES["int"].match(val):
                    return "%s = %r cannot be captured" % (name, val)
                env[chk[3]] = int(val)
            return None
        return "unknown check"

    def do_expect_lines(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        lines = []
        while True:
            line = c.read_line(deadline)
            if not line.endswith(b"\n"):
                self.fail(st, "lines until %s" % show(st.until),
                          shorten(b"".join(lines[-3:]) + line),
                          "no complete line before the deadline")
            if match_parts(st.until, line, self.env) is None:
                break
            lines.append(line)
        self.log("got  %d lines" % len(lines))
        for chk in st.checks:
            if chk[0] == "count":
                lo, hi = eval_operand(chk[1], self.env), \
                    eval_operand(chk[2], self.env)
                if not lo <= len(lines) <= hi:
                    self.fail(st, "%d..%d lines" % (lo, hi),
                              "%d lines: %s" % (len(lines), shorten(
                                  b"".join(lines[:4]))))
            elif chk[0] == "each":
                for ln in lines:
                    if match_parts(chk[1], ln, self.env):
                        self.fail(st, "each line like %s" % show(chk[1]),
                                  shorten(ln))
            elif chk[0] == "has":
                if not any(match_parts(chk[1], ln, self.env) is None
                           for ln in lines):
                    self.fail(st, "a line like %s" % show(chk[1]),
                              shorten(b"".join(lines[:6])))

    # -- connection limits
    def _probe(self, name, deadline, refusal):
        """Opens a connection: returns ('accepted', conn), ('refused', got)
        or ('other', got)."""
        try:
            c = Conn(self.addr, name, self.timeout)
        except OSError as e:
            return ("other", "connect failed: %s" % e)
        # A refusing server writes its message on accept and closes; an
        # accepting one writes nothing. Poll briefly before saying anything
        # (a request sent into a refused connection could turn the close
        # into a reset that loses the message).
        c._fill(min(deadline, time.monotonic() + 0.25))
        if not c.buf and not c.eof:
            try:
                c.send(b"version\r\n")
            except OSError as e:
                c.close()
                return ("other", "send failed: %s" % e)
            line = c.read_line(deadline)
            if line.startswith(b"VERSION "):
                return ("accepted", c)
            c.buf[:0] = line
        got = bytes(c.buf)
        if not c.eof:
            c._fill(min(deadline, time.monotonic() + 1.0))
            got = bytes(c.buf)
        err = match_parts(refusal, got, dict(self.env)) if refusal else "x"
        eof = c.eof
        c.close()
        if err is None and eof:
            return ("refused", got)
        return ("other", shorten(got) + (" (then closed)" if eof else
                                         " (still open)"))

    def do_fill_conns(self, st):
        for i in range(st.max):
            deadline = time.monotonic() + self.timeout
            res, what = self._probe("fill%d" % (i + 1), deadline, st.parts)
            if res == "accepted":
                self.filled.append(what)
                continue
            if res == "refused":
                self.log("refused after %d accepted connections"
                         % len(self.filled))
                return
            self.fail(st, show(st.parts) + " then close", what,
                      "after %d accepted connections" % len(self.filled))
        self.fail(st, "a refusal within %d connections" % st.max,
                  "all accepted")

    def do_close_filled(self, st):
        for c in self.filled:
            c.close()
        self.filled = []

    def do_await_accept(self, st):
        deadline = time.monotonic() + st.seconds
        last = ""
        while time.monotonic() < deadline:
            res, what = self._probe(st.arg, deadline, None)
            if res == "accepted":
                self.conns[st.arg] = what
                self.cur = st.arg
                return
            last = what
            time.sleep(0.05)
        self.fail(st, "an accepted connection within %gs" % st.seconds, last)


def opname(op):
    return "%s(0x%02x)" % (OPNAMES.get(op, "?"), op)


def stname(s):
    return "%s(0x%02x)" % (STATUS_NAMES.get(s, "?"), s)


def describe_frame(fr):
    out = "magic=0x%02x %s status=%s opaque=0x%x cas=%d" % (
        fr["magic"], opname(fr["opcode"]), stname(fr["status"]),
        fr["opaque"], fr["cas"])
    if fr.get("datatype"):
        out += " datatype=%d" % fr["datatype"]
    if "extras" in fr:
        if fr["extras"]:
            out += " extras=x\"%s\"" % fr["extras"].hex()
        if fr["key"]:
            out += " key=\"%s\"" % shorten(fr["key"])
        if fr["value"]:
            out += " value=\"%s\"" % shorten(fr["value"])
    return out


def describe_expect(st):
    return st.text.partition(" ")[2]


# ------------------------------------------------------------------- main

def list_steps(t):
    print("%s (mode %s):" % (t.path, t.mode))
    for i, st in enumerate(t.steps, 1):
        print("  %3d  %s" % (i, st))
        for chk in st.checks:
            print("         . %s" % " ".join(
                show(x) if isinstance(x, list) else
                (x.pattern if hasattr(x, "pattern") else str(x))
                for x in chk if x is not None))


def main(argv):
    args, files = [], []
    mode, timeout, listing, verbose = "plain", 5.0, False, False
    it = iter(argv)
    for a in it:
        if a == "--mode":
            mode = next(it, "plain")
        elif a == "--timeout":
            timeout = float(next(it, "5"))
        elif a == "--list":
            listing = True
        elif a == "-v":
            verbose = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            print("run.py: unknown option %s" % a, file=sys.stderr)
            return 2
        else:
            args.append(a)
    if listing:
        files = args
        if files and re.match(r"^[^/]*:\d+$", files[0]) and \
                not os.path.exists(files[0]):
            files = files[1:]
    else:
        if len(args) < 2:
            print("usage: run.py [--mode M] [--timeout S] [-v] HOST:PORT "
                  "FILE...\n       run.py --list FILE...", file=sys.stderr)
            return 2
        host, _, port = args[0].rpartition(":")
        addr = (host or "127.0.0.1", int(port))
        files = args[1:]
    transcripts = []
    for path in files:
        try:
            transcripts.append(Transcript(path))
        except (ParseError, OSError) as e:
            print("run.py: %s" % e, file=sys.stderr)
            return 2
    if listing:
        for t in transcripts:
            list_steps(t)
        return 0
    passed = failed = skipped = 0
    for t in transcripts:
        if t.mode != mode:
            print("SKIP %s (needs mode %s, server is %s)" % (t.name, t.mode,
                                                             mode))
            skipped += 1
            continue
        if t.fresh and passed + failed:
            print("note: %s wants a fresh server and runs after other "
                  "transcripts here" % t.name)
        if verbose:
            print("RUN  %s" % t.name)
        start = time.monotonic()
        try:
            Runner(addr, t, timeout, verbose).run()
        except StepFailure as e:
            print("FAIL %s: %s" % (t.name, e))
            failed += 1
        else:
            print("PASS %s (%d steps, %.1fs)" % (t.name, len(t.steps),
                                                 time.monotonic() - start))
            passed += 1
        sys.stdout.flush()
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
