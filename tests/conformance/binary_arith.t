# Binary protocol: increment and decrement (and their quiet forms).
# Extras: 8-byte delta, 8-byte initial value, 4-byte expiration; the
# expiration 0xffffffff means "do not create" on a miss. The result is an
# 8-byte big-endian number in the value. Checked against memcached 1.6.18.

send-bin flush opaque=1
expect-bin flush opaque=1

# A miss creates the item with the initial value (the delta is not applied).
send-bin incr key="ba:n" delta=5 initial=10 exptime=0 opaque=0x10
expect-bin incr value=u64:10 opaque=0x10 cas={$c1}
send-bin incr key="ba:n" delta=5 initial=10 exptime=0 opaque=0x11
expect-bin incr value=u64:15 opaque=0x11 cas={$c2 != $c1}
send-bin decr key="ba:n" delta=3 initial=0 exptime=0 opaque=0x12
expect-bin decr value=u64:12 opaque=0x12 cas={$c3 != $c2}
# the item is text: stored as the decimal digits, flags 0
send-bin get key="ba:n" opaque=0x13
expect-bin get flags=0 value="12" opaque=0x13 cas=$c3
conn text
send "get ba:n\r\n"
expect "VALUE ba:n 0 2\r\n12\r\nEND\r\n"
conn main

# the expiration applies to the item a miss creates (seen through mg t)
send-bin incr key="ba:ttl" delta=1 initial=3 exptime=100 opaque=0x1b
expect-bin incr value=u64:3 opaque=0x1b cas={int}
conn text
send "mg ba:ttl t v\r\n"
expect "VA 1 t{int:99..100}\r\n3\r\n"
conn main
# ...and not to an existing one
send-bin incr key="ba:ttl" delta=1 initial=3 exptime=5000 opaque=0x1c
expect-bin incr value=u64:4 opaque=0x1c cas={int}
conn text
send "mg ba:ttl t\r\n"
expect "HD t{int:99..100}\r\n"
conn main

# decr on a miss creates with the initial value too
send-bin decr key="ba:d" delta=100 initial=7 exptime=0 opaque=0x14
expect-bin decr value=u64:7 opaque=0x14 cas={int}
# decr stops at 0
send-bin decr key="ba:d" delta=100 initial=0 exptime=0 opaque=0x15
expect-bin decr value=u64:0 opaque=0x15 cas={int}
send-bin decr key="ba:d" delta=1 opaque=0x16
expect-bin decr value=u64:0 opaque=0x16 cas={int}

# exptime 0xffffffff: do not create; a miss is KEY_ENOENT
send-bin incr key="ba:none" delta=1 initial=5 exptime=0xffffffff opaque=0x17
expect-bin incr status=key_enoent value="Not found" opaque=0x17
send-bin decr key="ba:none" delta=1 initial=5 exptime=0xffffffff opaque=0x18
expect-bin decr status=key_enoent value="Not found" opaque=0x18
send-bin get key="ba:none" opaque=0x19
expect-bin get status=key_enoent value="Not found" opaque=0x19
# ...but a hit is incremented as usual
send-bin incr key="ba:n" delta=1 initial=0 exptime=0xffffffff opaque=0x1a
expect-bin incr value=u64:13 opaque=0x1a cas={int}

# incr wraps at 2^64
send-bin set key="ba:big" flags=0 value="18446744073709551614" opaque=0x20
expect-bin set opaque=0x20 cas={int}
send-bin incr key="ba:big" delta=1 opaque=0x21
expect-bin incr value=u64:0xffffffffffffffff opaque=0x21 cas={int}
send-bin incr key="ba:big" delta=3 opaque=0x22
expect-bin incr value=u64:2 opaque=0x22 cas={int}
# the shorter result is written over the old digits, padded with spaces
# (protocol.txt: the number MAY be space-padded; memcached does so when the
# new number fits in the old value)
send-bin get key="ba:big" opaque=0x23
expect-bin get flags=0 value="2"+" "*19 opaque=0x23 cas={int}
# a delta of 2^64-1
send-bin incr key="ba:big" delta=0xffffffffffffffff opaque=0x24
expect-bin incr value=u64:1 opaque=0x24 cas={int}
# an initial value of 2^64-1 is kept whole
send-bin incr key="ba:max" delta=1 initial=0xffffffffffffffff opaque=0x25
expect-bin incr value=u64:0xffffffffffffffff opaque=0x25 cas={int}

# a value that is not a number: DELTA_BADVAL
send-bin set key="ba:text" flags=0 value="abc" opaque=0x30
expect-bin set opaque=0x30 cas={int}
send-bin incr key="ba:text" delta=1 opaque=0x31
expect-bin incr status=delta_badval value="Non-numeric server-side value for incr or decr" opaque=0x31
send-bin decr key="ba:text" delta=1 opaque=0x32
expect-bin decr status=delta_badval value="Non-numeric server-side value for incr or decr" opaque=0x32
# a number too big for 64 bits is not numeric either
send-bin set key="ba:text" flags=0 value="18446744073709551616" opaque=0x33
expect-bin set opaque=0x33 cas={int}
send-bin incr key="ba:text" delta=1 opaque=0x34
expect-bin incr status=delta_badval value="Non-numeric server-side value for incr or decr" opaque=0x34

# with a cas: a stale one is refused, the current one is applied
send-bin set key="ba:cas" flags=0 value="100" opaque=0x40
expect-bin set opaque=0x40 cas={$k1}
send-bin incr key="ba:cas" delta=1 cas=$k1+1000 opaque=0x41
expect-bin incr status=key_eexists value="Data exists for key." opaque=0x41
send-bin incr key="ba:cas" delta=1 cas=$k1 opaque=0x42
expect-bin incr value=u64:101 opaque=0x42 cas={$k2 != $k1}

# quiet forms: nothing on success, errors are still sent
send-bin incrq key="ba:q" delta=1 initial=50 opaque=0x50
send-bin incrq key="ba:q" delta=9 opaque=0x51
send-bin decrq key="ba:q" delta=4 opaque=0x52
send-bin incrq key="ba:text" delta=1 opaque=0x53
send-bin decrq key="ba:none" delta=1 exptime=0xffffffff opaque=0x54
send-bin noop opaque=0x55
expect-bin incrq status=delta_badval value="Non-numeric server-side value for incr or decr" opaque=0x53
expect-bin decrq status=key_enoent value="Not found" opaque=0x54
expect-bin noop opaque=0x55
send-bin get key="ba:q" opaque=0x56
expect-bin get flags=0 value="55" opaque=0x56 cas={int}

# a decrement that shortens the number leaves the value's length alone
# (space-padded), the binary result is the number; a longer result makes
# the value longer
send-bin set key="ba:len" flags=0 value="100" opaque=0x60
expect-bin set opaque=0x60 cas={int}
send-bin decr key="ba:len" delta=91 opaque=0x61
expect-bin decr value=u64:9 opaque=0x61 cas={int}
send-bin get key="ba:len" opaque=0x64
expect-bin get flags=0 value="9  " opaque=0x64 cas={int}
send-bin incr key="ba:len" delta=991 opaque=0x62
expect-bin incr value=u64:1000 opaque=0x62 cas={int}
send-bin get key="ba:len" opaque=0x63
expect-bin get flags=0 value="1000" opaque=0x63 cas={int}

# the extras must be exactly 20 bytes
send-bin incr key="ba:n" extras=u64:1 opaque=0x70
expect-bin incr status=einval value="Invalid arguments" opaque=0x70
expect-closed
