# Binary protocol: the get family (get, getq, getk, getkq) and what each
# returns on a hit and on a miss. Every response echoes the request's
# opaque; hits carry the item's cas and its 4-byte flags as extras.
# Written from protocol_binary.h and the binary protocol spec; checked
# against memcached 1.6.18.

send-bin flush opaque=0xf1
expect-bin flush opaque=0xf1

send-bin set key="bg:a" flags=0xdeadbeef exptime=0 value="alpha" opaque=0x101
expect-bin set opaque=0x101 cas={$ca}
send-bin set key="bg:b" flags=0 value="" opaque=0x102
expect-bin set opaque=0x102 cas={$cb != $ca}

# get: extras are the flags, no key in the response.
send-bin get key="bg:a" opaque=0x11223344
expect-bin get flags=0xdeadbeef value="alpha" opaque=0x11223344 cas=$ca
# an empty value
send-bin get key="bg:b" opaque=2
expect-bin get flags=0 opaque=2 cas=$cb
# miss: KEY_ENOENT with the text "Not found", no extras, cas 0
send-bin get key="bg:missing" opaque=3
expect-bin get status=key_enoent value="Not found" opaque=3

# getk: the key comes back; on a miss the key but no error text.
send-bin getk key="bg:a" opaque=4
expect-bin getk flags=0xdeadbeef key="bg:a" value="alpha" opaque=4 cas=$ca
send-bin getk key="bg:missing" opaque=5
expect-bin getk status=key_enoent key="bg:missing" opaque=5

# getq / getkq: a miss produces nothing at all, a hit the usual reply.
# Pipelined with a noop: the noop's reply must be the next thing.
send-bin getq key="bg:missing" opaque=6
send-bin getkq key="bg:missing2" opaque=7
send-bin noop opaque=8
expect-bin noop opaque=8

send-bin getq key="bg:a" opaque=9
send-bin getq key="bg:missing" opaque=10
send-bin getkq key="bg:b" opaque=11
send-bin getkq key="bg:missing" opaque=12
send-bin noop opaque=13
expect-bin getq flags=0xdeadbeef value="alpha" opaque=9 cas=$ca
expect-bin getkq flags=0 key="bg:b" opaque=11 cas=$cb
expect-bin noop opaque=13

# A multi-get the way clients do it: many getkq then one noop.
send-bin set key="bg:c" flags=3 value="gamma" opaque=0x103
expect-bin set opaque=0x103 cas={$cc}
send-bin getkq key="bg:a" opaque=21
send-bin getkq key="bg:nope1" opaque=22
send-bin getkq key="bg:c" opaque=23
send-bin getkq key="bg:nope2" opaque=24
send-bin getkq key="bg:b" opaque=25
send-bin noop opaque=26
expect-bin getkq flags=0xdeadbeef key="bg:a" value="alpha" opaque=21 cas=$ca
expect-bin getkq flags=3 key="bg:c" value="gamma" opaque=23 cas=$cc
expect-bin getkq flags=0 key="bg:b" opaque=25 cas=$cb
expect-bin noop opaque=26

# Binary values (all 256 byte values) come back unchanged.
send-bin set key="bg:bin" flags=7 value=x"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff" opaque=30
expect-bin set opaque=30 cas={$cbin}
send-bin get key="bg:bin" opaque=31
expect-bin get flags=7 value=x"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff" opaque=31 cas=$cbin

# A 250-byte key is the longest allowed.
send-bin set key="k"*250 flags=1 value="long key" opaque=40
expect-bin set opaque=40 cas={int}
send-bin getk key="k"*250 opaque=41
expect-bin getk flags=1 key="k"*250 value="long key" opaque=41 cas={int}

# Items stored over the text protocol are the same items.
conn text
send "set bg:t 12345 0 4\r\ntext\r\n"
expect "STORED\r\n"
send "gets bg:a\r\n"
expect "VALUE bg:a 3735928559 5 {$ca}\r\nalpha\r\nEND\r\n"
conn main
send-bin get key="bg:t" opaque=50
expect-bin get flags=12345 value="text" opaque=50 cas={int}

# The reserved (vbucket) field of a request is ignored.
send-bin get key="bg:a" vbucket=0x1234 opaque=51
expect-bin get flags=0xdeadbeef value="alpha" opaque=51 cas=$ca
