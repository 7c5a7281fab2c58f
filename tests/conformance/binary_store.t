# Binary protocol: set, add, replace, append, prepend and their quiet
# forms; compare-and-swap through the header's cas field; the too-large
# and not-stored errors. Checked against memcached 1.6.18.

send-bin flush opaque=1
expect-bin flush opaque=1

# --- set
send-bin set key="bs:a" flags=1 exptime=0 value="one" opaque=0x10
expect-bin set opaque=0x10 cas={$c1}
send-bin set key="bs:a" flags=2 exptime=0 value="two" opaque=0x11
expect-bin set opaque=0x11 cas={$c2 > $c1}
send-bin get key="bs:a" opaque=0x12
expect-bin get flags=2 value="two" opaque=0x12 cas=$c2

# set with the right cas succeeds and gets a new cas
send-bin set key="bs:a" flags=3 value="three" cas=$c2 opaque=0x13
expect-bin set opaque=0x13 cas={$c3 > $c2}
# set with a stale cas: KEY_EEXISTS, the item is unchanged
send-bin set key="bs:a" flags=4 value="four" cas=$c2 opaque=0x14
expect-bin set status=key_eexists value="Data exists for key." opaque=0x14
send-bin get key="bs:a" opaque=0x15
expect-bin get flags=3 value="three" opaque=0x15 cas=$c3
# set with a cas on a missing key: KEY_ENOENT
send-bin set key="bs:missing" value="x" cas=12345 opaque=0x16
expect-bin set status=key_enoent value="Not found" opaque=0x16

# --- add
send-bin add key="bs:b" flags=5 value="bee" opaque=0x20
expect-bin add opaque=0x20 cas={$cb}
# add on an existing key: KEY_EEXISTS (not NOT_STORED)
send-bin add key="bs:b" flags=6 value="bee2" opaque=0x21
expect-bin add status=key_eexists value="Data exists for key." opaque=0x21
send-bin get key="bs:b" opaque=0x22
expect-bin get flags=5 value="bee" opaque=0x22 cas=$cb
# add with a cas in the header is a cas (found by tools/difffuzz): on a
# missing key KEY_ENOENT, with a stale cas KEY_EEXISTS, and with the
# item's cas it replaces the item
send-bin add key="bs:addcas" value="x" cas=12345 opaque=0x23
expect-bin add status=key_enoent value="Not found" opaque=0x23
send-bin add key="bs:b" flags=6 value="bee3" cas=12345 opaque=0x24
expect-bin add status=key_eexists value="Data exists for key." opaque=0x24
send-bin add key="bs:b" flags=6 value="bee4" cas=$cb opaque=0x25
expect-bin add opaque=0x25 cas={$cb1 != $cb}
send-bin get key="bs:b" opaque=0x26
expect-bin get flags=6 value="bee4" opaque=0x26 cas=$cb1

# --- replace
# replace on a missing key: KEY_ENOENT (not NOT_STORED)
send-bin replace key="bs:nokey" value="x" opaque=0x30
expect-bin replace status=key_enoent value="Not found" opaque=0x30
send-bin replace key="bs:b" flags=7 value="replaced" opaque=0x31
expect-bin replace opaque=0x31 cas={$cb2 != $cb}
send-bin replace key="bs:b" flags=8 value="again" cas=$cb opaque=0x32
expect-bin replace status=key_eexists value="Data exists for key." opaque=0x32
send-bin replace key="bs:b" flags=8 value="again" cas=$cb2 opaque=0x33
expect-bin replace opaque=0x33 cas={$cb3 != $cb2}
send-bin get key="bs:b" opaque=0x34
expect-bin get flags=8 value="again" opaque=0x34 cas=$cb3

# --- quiet forms: silent on success, a reply on failure
send-bin setq key="bs:q" flags=9 value="quiet" opaque=0x40
send-bin addq key="bs:q2" value="added" opaque=0x41
send-bin replaceq key="bs:q" flags=10 value="quiet2" opaque=0x42
send-bin noop opaque=0x43
expect-bin noop opaque=0x43
send-bin addq key="bs:q" value="exists" opaque=0x44
send-bin replaceq key="bs:nokey" value="missing" opaque=0x45
send-bin setq key="bs:q" value="stale" cas=1 opaque=0x46
send-bin noop opaque=0x47
expect-bin addq status=key_eexists value="Data exists for key." opaque=0x44
expect-bin replaceq status=key_enoent value="Not found" opaque=0x45
expect-bin setq status=key_eexists value="Data exists for key." opaque=0x46
expect-bin noop opaque=0x47
send-bin getk key="bs:q" opaque=0x48
expect-bin getk flags=10 key="bs:q" value="quiet2" opaque=0x48 cas={int}
send-bin getk key="bs:q2" opaque=0x49
expect-bin getk flags=0 key="bs:q2" value="added" opaque=0x49 cas={int}

# --- append / prepend: no extras; the flags and the rest stay
send-bin set key="bs:ap" flags=77 value="middle" opaque=0x50
expect-bin set opaque=0x50 cas={$ap1}
send-bin append key="bs:ap" value="-end" opaque=0x51
expect-bin append opaque=0x51 cas={$ap2 != $ap1}
send-bin prepend key="bs:ap" value="start-" opaque=0x52
expect-bin prepend opaque=0x52 cas={$ap3 != $ap2}
send-bin get key="bs:ap" opaque=0x53
expect-bin get flags=77 value="start-middle-end" opaque=0x53 cas=$ap3
# with a cas: a stale one is refused, the current one works
send-bin append key="bs:ap" value="!" cas=$ap1 opaque=0x54
expect-bin append status=key_eexists value="Data exists for key." opaque=0x54
send-bin append key="bs:ap" value="!" cas=$ap3 opaque=0x55
expect-bin append opaque=0x55 cas={int}
# on a missing key: NOT_STORED
send-bin append key="bs:nokey" value="x" opaque=0x56
expect-bin append status=not_stored value="Not stored." opaque=0x56
send-bin prepend key="bs:nokey" value="x" opaque=0x57
expect-bin prepend status=not_stored value="Not stored." opaque=0x57
# quiet forms
send-bin appendq key="bs:ap" value="+" opaque=0x58
send-bin prependq key="bs:ap" value="+" opaque=0x59
send-bin appendq key="bs:nokey" value="x" opaque=0x5a
send-bin prependq key="bs:nokey" value="x" opaque=0x5b
send-bin noop opaque=0x5c
expect-bin appendq status=not_stored value="Not stored." opaque=0x5a
expect-bin prependq status=not_stored value="Not stored." opaque=0x5b
expect-bin noop opaque=0x5c
send-bin get key="bs:ap" opaque=0x5d
expect-bin get flags=77 value="+start-middle-end!+" opaque=0x5d cas={int}

# --- sizes: 1,000,000 bytes are stored; more than 1 MiB is E2BIG, the
# value is read and dropped and the connection goes on.
send-bin set key="bs:big" flags=1 value="v"*1000000 opaque=0x60
expect-bin set opaque=0x60 cas={int}
send-bin get key="bs:big" opaque=0x61
expect-bin get flags=1 value="v"*1000000 opaque=0x61 cas={int}
send-bin set key="bs:huge" value="h"*1048577 opaque=0x62
expect-bin set status=e2big value="Too large." opaque=0x62
send-bin setq key="bs:huge" value="h"*1048577 opaque=0x63
send-bin noop opaque=0x64
expect-bin setq status=e2big value="Too large." opaque=0x63
expect-bin noop opaque=0x64
send-bin get key="bs:huge" opaque=0x65
expect-bin get status=key_enoent value="Not found" opaque=0x65
# a failed over-size set of an existing key removes the old item
send-bin set key="bs:big" value="w"*2000000 opaque=0x66
expect-bin set status=e2big value="Too large." opaque=0x66
send-bin get key="bs:big" opaque=0x67
expect-bin get status=key_enoent value="Not found" opaque=0x67

# --- the flags and expiration extras are both required for set/add/replace
send-bin set key="bs:e" value="x" extras=u32:1 opaque=0x70
expect-bin set status=einval value="Invalid arguments" opaque=0x70
expect-closed
