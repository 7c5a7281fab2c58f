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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trterms import ParseError, StepFailure, show  # noqa: E402
from trparse import Transcript  # noqa: E402
from trrun import Runner  # noqa: E402


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
