"""trparse: reads a transcript file into its steps (run.py documents the
format)."""

import os
import re

from trterms import (
    EXTRA_FIELDS,
    MAX_WAIT,
    OPCODES,
    ParseError,
    Placeholder,
    STATUSES,
    check_operand,
    parse_terms,
    split_tokens)

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
