# Meta set (ms): flags b c C F I k O q T M and P/L; the modes; the error
# replies. Checked against memcached 1.6.18.
# 1.6.18's mode tokens (as its protocol.txt documents them): MS set,
# ME add, MA append, MP prepend, MR replace; lower case is refused.

send "flush_all\r\n"
expect "OK\r\n"

# --- a plain set: HD; the value, flags and TTL are stored
send "ms ms:a 5\r\nhello\r\n"
expect "HD\r\n"
send "mg ms:a v f t\r\n"
expect "VA 5 f0 t-1\r\nhello\r\n"
send "ms ms:a 5 F123 T100\r\nworld\r\n"
expect "HD\r\n"
send "mg ms:a v f t\r\n"
expect "VA 5 f123 t{int:99..100}\r\nworld\r\n"
send "get ms:a\r\n"
expect "VALUE ms:a 123 5\r\nworld\r\nEND\r\n"
# the largest client flags
send "ms ms:a 1 F4294967295\r\nx\r\n"
expect "HD\r\n"
send "mg ms:a f\r\n"
expect "HD f4294967295\r\n"
# an empty value
send "ms ms:empty 0\r\n\r\n"
expect "HD\r\n"
send "mg ms:empty v s\r\n"
expect "VA 0 s0\r\n\r\n"
# a value with CR LF inside
send "ms ms:crlf 4\r\n\r\n\r\n\r\n"
expect "HD\r\n"
send "mg ms:crlf v\r\n"
expect "VA 4\r\n\r\n\r\n\r\n"

# --- return flags: c (the new cas), k, O, b
send "ms ms:c 3 c\r\none\r\n"
expect "HD c{$c1}\r\n"
send "mg ms:c c\r\n"
expect "HD c{$c1}\r\n"
send "ms ms:c 3 c k Oxyz\r\ntwo\r\n"
expect "HD c{$c2 > $c1} kms:c Oxyz\r\n"
send "ms ms:c 3 Oxyz k\r\ntwo\r\n"
expect "HD Oxyz kms:c\r\n"
# b: base64 key ("bXM6Yg==" is "ms:b"); the key comes back in base64, with b
send "ms bXM6Yg== 3 b k\r\nb64\r\n"
expect "HD kbXM6Yg== b\r\n"
send "mg ms:b v\r\n"
expect "VA 3\r\nb64\r\n"

# --- C: compare and swap
send "ms ms:c 3 c\r\nnew\r\n"
expect "HD c{$c3}\r\n"
send "ms ms:c 3 C{$c3} c\r\ncas\r\n"
expect "HD c{$c4 != $c3}\r\n"
send "ms ms:c 3 C{$c3} c\r\nold\r\n"
expect "EX c0\r\n"
send "ms ms:c 3 C{$c3}\r\nold\r\n"
expect "EX\r\n"
send "mg ms:c v c\r\n"
expect "VA 3 c{$c4}\r\ncas\r\n"
send "ms ms:nokey 3 C12345 c\r\nxyz\r\n"
expect "NF c0\r\n"
send "ms ms:nokey 3 C12345 Oo k\r\nxyz\r\n"
expect "NF Oo kms:nokey\r\n"

# --- modes
# MS: set (the default)
send "ms ms:m 3 MS\r\nset\r\n"
expect "HD\r\n"
# ME: add
send "ms ms:m 3 ME c\r\nadd\r\n"
expect "NS c0\r\n"
send "ms ms:m2 3 ME\r\nadd\r\n"
expect "HD\r\n"
send "mg ms:m2 v\r\n"
expect "VA 3\r\nadd\r\n"
# MA: append, MP: prepend; the flags stay
send "ms ms:m 3 F7 MS\r\nmid\r\n"
expect "HD\r\n"
send "ms ms:m 4 MA F99\r\n-end\r\n"
expect "HD\r\n"
send "ms ms:m 6 MP\r\nstart-\r\n"
expect "HD\r\n"
send "mg ms:m v f\r\n"
expect "VA 13 f7\r\nstart-mid-end\r\n"
send "ms ms:none 1 MA\r\nx\r\n"
expect "NS\r\n"
send "ms ms:none 1 MP\r\nx\r\n"
expect "NS\r\n"
# MR: replace
send "ms ms:none 1 MR\r\nx\r\n"
expect "NS\r\n"
send "ms ms:m 7 MR\r\nreplace\r\n"
expect "HD\r\n"
send "mg ms:m v f\r\n"
expect "VA 7 f0\r\nreplace\r\n"
send "mg ms:none v\r\n"
expect "EN\r\n"
# the modes respect C
send "mg ms:m c\r\n"
expect "HD c{$m1}\r\n"
send "ms ms:m 1 MA C{$m1+1000}\r\n!\r\n"
expect "EX\r\n"
send "ms ms:m 1 MA C{$m1}\r\n!\r\n"
expect "HD\r\n"
send "mg ms:m v\r\n"
expect "VA 8\r\nreplace!\r\n"
# unknown and lower-case modes
send "ms ms:m 3 MX\r\nabc\r\n"
expect "CLIENT_ERROR invalid mode for ms M token\r\n"
send "ms ms:m 3 Ms\r\nabc\r\n"
expect "CLIENT_ERROR invalid mode for ms M token\r\n"

# --- q: HD is suppressed, NS/EX/NF are not
send "ms ms:q 1 q\r\na\r\nmn\r\n"
expect "MN\r\n"
send "ms ms:q 1 q ME\r\nb\r\nms ms:none 1 q MR\r\nc\r\nms ms:q 1 q C1\r\nd\r\nms ms:none 1 q C1\r\ne\r\nmn\r\n"
expect "NS\r\nNS\r\nEX\r\nNF\r\nMN\r\n"
send "mg ms:q v\r\n"
expect "VA 1\r\na\r\n"

# --- T: TTL; a negative TTL stores an item that is already expired
send "ms ms:t 1 T-1\r\nx\r\n"
expect "HD\r\n"
send "mg ms:t v\r\n"
expect "EN\r\n"
# T2, not T1: an item stored with T1 expires at the next tick of the
# server's one-second clock, which may fall between the set and the get
# (kurad's set waits for an fdatasync). T2 lives more than 1 s and at most
# 2 s, so the get finds it and the wait outlives it.
send "ms ms:t 1 T2\r\nx\r\n"
expect "HD\r\n"
send "mg ms:t t v\r\n"
expect "VA 1 t{int:1..2}\r\nx\r\n"
# wait for the 2 s TTL to pass (server clock resolution 1 s)
wait 2.1
send "mg ms:t v\r\n"
expect "EN\r\n"

# --- P and L are ignored
send "ms ms:p 1 Pfoo Lbar/\r\nx\r\n"
expect "HD\r\n"

# --- I without C: a plain set
send "ms ms:i 1 I\r\nx\r\n"
expect "HD\r\n"
send "mg ms:i v\r\n"
expect "VA 1\r\nx\r\n"

# --- sizes: too large is SERVER_ERROR after the data is read
send "ms ms:big 1048577 T0\r\n"+"x"*1048577+"\r\n"
expect "SERVER_ERROR object too large for cache\r\n"
send "ms ms:big 1048577 q\r\n"+"x"*1048577+"\r\nmn\r\n"
expect "SERVER_ERROR object too large for cache\r\nMN\r\n"
send "ms ms:ok 500000\r\n"+"y"*500000+"\r\n"
expect "HD\r\n"
send "mg ms:ok s v\r\n"
expect "VA 500000 s500000\r\n"+"y"*500000+"\r\n"

# --- errors
# the data is not followed by CR LF: bad data chunk, and the line after it
# is read as a command
send "ms ms:a 3\r\nabcd\r\n"
expect "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
# no length
send "ms ms:a\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "ms ms:a -1\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
# a length that is not a number: the data line is then a command
send "ms ms:a abc\r\nabc\r\n"
expect "CLIENT_ERROR bad command line format\r\nERROR\r\n"
# bad flags: the data is swallowed
send "ms ms:a 3 F-1\r\nabc\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "ms ms:a 3 Fabc\r\nabc\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "ms ms:a 3 Tabc\r\nabc\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
# (E5 is not pinned: 1.6.18 refuses E, kurad takes it as later memcached)
send "ms ms:a 3 k Oabc O2\r\nabc\r\n"
expect "CLIENT_ERROR duplicate flag\r\n"
send "ms ms:a 3 O"+"o"*32+"\r\nabc\r\n"
expect "CLIENT_ERROR opaque token too long\r\n"
send "ms ms:a 3 b\r\nabc\r\n"
expect "CLIENT_ERROR error decoding key\r\n"
# a key too long: memcached then reads the data line as a command
# (ERROR); kurad discards the announced data. Only the refusal is pinned.
conn longkey
send "ms "+"k"*251+" 3\r\nabc\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
close longkey
conn main
send "ms\r\n"
expect "ERROR\r\n"
# and the connection is still in step; the failed sets changed nothing
send "mg ms:a v f\r\n"
expect "VA 1 f4294967295\r\nx\r\n"

# --- issue 28 (found by tools/difffuzz): memcached 1.6.18 step by step
# C turns a set or a replace into a cas store: a missing key is NF
send "ms i28:s1 1 MR C5\r\nx\r\n"
expect "NF\r\n"
# C0 compares nothing: a cas store fails, an append goes ahead
send "ms i28:s2 1\r\n5\r\n"
expect "HD\r\n"
send "ms i28:s2 1 C0\r\n7\r\n"
expect "EX\r\n"
send "ms i28:s2 1 C0 I\r\n7\r\n"
expect "EX\r\n"
send "ms i28:s2 1 C0 MA\r\n7\r\n"
expect "HD\r\n"
send "mg i28:s2 v c\r\n"
expect "VA 2 c{$s2}\r\n57\r\n"
# I lets only a cas store through with an older cas, not an append
send "ms i28:s2 1 C{$s2-1} I MA\r\nx\r\n"
expect "EX\r\n"
# a stale store keeps the item's ttl, not the request's
send "ms i28:s3 1 T1000\r\nx\r\n"
expect "HD\r\n"
send "mg i28:s3 c\r\n"
expect "HD c{$s3}\r\n"
send "ms i28:s3 1 T1000\r\ny\r\n"
expect "HD\r\n"
send "ms i28:s3 1 C{$s3} I T5000\r\nz\r\n"
expect "HD\r\n"
send "mg i28:s3 t v\r\n"
expect "VA 1 t{int:999..1000} X W\r\nz\r\n"
# errors in memcached's order: too many flags is seen before the length
send "ms i28:s4 x c f h k l O q s t u v N1 R1 T1 C1 P L\r\n"
expect "CLIENT_ERROR options flags too long\r\n"
# a flag error before the mode, the mode before a long opaque
send "ms i28:s4 1 q v c MX c\r\nx\r\n"
expect "CLIENT_ERROR duplicate flag\r\n"
send "ms i28:s4 1 Me F0 Z\r\nx\r\n"
expect "CLIENT_ERROR invalid flag\r\n"
send "ms i28:s4 1 MX O"+"o"*33+"\r\nx\r\n"
expect "CLIENT_ERROR invalid mode for ms M token\r\n"
send "ms i28:s4 1 MSS\r\nx\r\n"
expect "CLIENT_ERROR incorrect length for M token\r\n"
send "ms i28:s4 1 Jx\r\nx\r\n"
expect "CLIENT_ERROR invalid numeric initial value\r\n"
send "ms i28:s4 1 Dx F\r\nx\r\n"
expect "CLIENT_ERROR invalid numeric delta value\r\n"
send "mg i28:s4 v\r\n"
expect "EN\r\n"
# too large, whatever the mode: the old value goes too
send "ms i28:s5 1\r\nx\r\n"
expect "HD\r\n"
send "ms i28:s5 1100000 MA\r\n"+"x"*1100000+"\r\n"
expect "SERVER_ERROR object too large for cache\r\n"
send "mg i28:s5 v\r\n"
expect "EN\r\n"
