# Meta get (mg): every flag memcached 1.6.18 documents and implements.
# Return flags come back in the order they were asked for. Checked against
# memcached 1.6.18. (E, an explicit cas, is documented for later versions:
# 1.6.18 answers "CLIENT_ERROR invalid flag".)

send "flush_all\r\n"
expect "OK\r\n"
send "ms mg:a 5 F30 T0\r\nhello\r\n"
expect "HD\r\n"
send "mg mg:a c\r\n"
expect "HD c{$c}\r\n"

# --- no flags: HD, a miss EN
send "mg mg:a\r\n"
expect "HD\r\n"
send "mg mg:missing\r\n"
expect "EN\r\n"

# --- v: the value
send "mg mg:a v\r\n"
expect "VA 5\r\nhello\r\n"
send "mg mg:missing v\r\n"
expect "EN\r\n"

# --- each return flag, and their order
send "mg mg:a f\r\n"
expect "HD f30\r\n"
send "mg mg:a s\r\n"
expect "HD s5\r\n"
send "mg mg:a t\r\n"
expect "HD t-1\r\n"
send "mg mg:a k\r\n"
expect "HD kmg:a\r\n"
send "mg mg:a Oabc123\r\n"
expect "HD Oabc123\r\n"
send "mg mg:a v f c t s k Oop\r\n"
expect "VA 5 f30 c{$c} t-1 s5 kmg:a Oop\r\nhello\r\n"
send "mg mg:a Oop k s t c f v\r\n"
expect "VA 5 Oop kmg:a s5 t-1 c{$c} f30\r\nhello\r\n"
# an opaque token of 32 bytes (the O and 31 more) is the longest
send "mg mg:a O"+"o"*31+"\r\n"
expect "HD O"+"o"*31+"\r\n"
# a miss echoes the opaque and the key
send "mg mg:missing v Oq1 k\r\n"
expect "EN Oq1 kmg:missing\r\n"

# --- h (hit before?) and l (seconds since the last access), as they were
# before this command
send "ms mg:h 1 T0\r\nx\r\n"
expect "HD\r\n"
send "mg mg:h h l\r\n"
expect "HD h0 l{int:0..1}\r\n"
send "mg mg:h h l\r\n"
expect "HD h1 l{int:0..1}\r\n"
# u: no LRU bump, the item is not marked as fetched
send "ms mg:u 1 T0\r\nx\r\n"
expect "HD\r\n"
send "mg mg:u u h v\r\n"
expect "VA 1 h0\r\nx\r\n"
send "mg mg:u u h\r\n"
expect "HD h0\r\n"
send "mg mg:u h\r\n"
expect "HD h0\r\n"
send "mg mg:u h\r\n"
expect "HD h1\r\n"

# --- q: a miss is silent (the mn after it answers); a hit is not
send "mg mg:missing v q\r\nmg mg:missing2 q k Ox\r\nmn\r\n"
expect "MN\r\n"
send "mg mg:a v q\r\nmn\r\n"
expect "VA 5\r\nhello\r\nMN\r\n"
send "mg mg:a q k\r\nmn\r\n"
expect "HD kmg:a\r\nMN\r\n"
send "mg mg:a q\r\nmn\r\n"
expect "HD\r\nMN\r\n"
# a pipeline of gets the way clients send it
send "mg mg:a v k q O1\r\nmg mg:x v k q O2\r\nmg mg:h v k q O3\r\nmn\r\n"
expect "VA 5 kmg:a O1\r\nhello\r\nVA 1 kmg:h O3\r\nx\r\nMN\r\n"

# --- T: update the TTL (like touch / gat); t reports it
send "mg mg:a T30 t v\r\n"
expect "VA 5 t30\r\nhello\r\n"
send "mg mg:a t\r\n"
expect "HD t{int:29..30}\r\n"
send "mg mg:a T0 t\r\n"
expect "HD t-1\r\n"
send "mg mg:missing T30 t\r\n"
expect "EN\r\n"
# a TTL of -1 ends the item
send "ms mg:gone 1 T0\r\nx\r\n"
expect "HD\r\n"
send "mg mg:gone T-1\r\n"
expect "HD\r\n"
send "mg mg:gone v\r\n"
expect "EN\r\n"

# --- b: the key is base64 ("bWc6YQ==" is "mg:a"). A key given in base64
# is returned as the item was stored: text here, since mg:a was stored
# with a text key
send "mg bWc6YQ== b v k\r\n"
expect "VA 5 kmg:a\r\nhello\r\n"
send "mg bWc6bm9uZQ== b v\r\n"
expect "EN\r\n"
# a binary key (bytes 01 02 03) stored with b comes back in base64, with b
send "ms AQID 2 b\r\nab\r\n"
expect "HD\r\n"
send "mg AQID b k v\r\n"
expect "VA 2 kAQID b\r\nab\r\n"
send "mg AQID b k v q\r\nmn\r\n"
expect "VA 2 kAQID b\r\nab\r\nMN\r\n"
send "mg !!!! b v\r\n"
expect "CLIENT_ERROR error decoding key\r\n"

# --- N: vivify on a miss. The first client gets an empty item and W (won);
# later ones get Z (a winner was already told). A hit is a hit.
send "mg mg:viv N30 v c t s\r\n"
expect "VA 0 c{$vc} t30 s0 W\r\n\r\n"
send "mg mg:viv N30 v c t\r\n"
expect "VA 0 c{$vc} t{int:29..30} Z\r\n\r\n"
send "mg mg:viv v\r\n"
expect "VA 0 Z\r\n\r\n"
send "mg mg:viv s\r\n"
expect "HD s0 Z\r\n"
# storing the value clears the flags
send "ms mg:viv 3 T30\r\nnew\r\n"
expect "HD\r\n"
send "mg mg:viv v\r\n"
expect "VA 3\r\nnew\r\n"
send "mg mg:a N30 v\r\n"
expect "VA 5\r\nhello\r\n"
# N0: the stub has no TTL
send "mg mg:viv0 N0 v t\r\n"
expect "VA 0 t-1 W\r\n\r\n"
send "mg mg:viv0 v t\r\n"
expect "VA 0 t-1 Z\r\n\r\n"
# with q a vivified miss is still answered
send "mg mg:vivq N30 q s\r\nmn\r\n"
expect "HD s0 W\r\nMN\r\n"

# --- R: win the recache when the remaining TTL is below the token
send "ms mg:r 3 T100\r\nold\r\n"
expect "HD\r\n"
send "mg mg:r R30 v t\r\n"
expect "VA 3 t{int:99..100}\r\nold\r\n"
send "mg mg:r R200 v t\r\n"
expect "VA 3 t{int:99..100} W\r\nold\r\n"
send "mg mg:r R200 v\r\n"
expect "VA 3 Z\r\nold\r\n"
send "mg mg:r v\r\n"
expect "VA 3 Z\r\nold\r\n"
send "ms mg:r 3 T100\r\nnew\r\n"
expect "HD\r\n"
send "mg mg:r v\r\n"
expect "VA 3\r\nnew\r\n"

# --- P and L are accepted and ignored (proxy hints)
send "mg mg:a P Lpath/ v\r\n"
expect "VA 5\r\nhello\r\n"

# --- errors
# (E5 is not pinned: 1.6.18 refuses E, kurad takes it as later memcached)
send "mg mg:a y\r\n"
expect "CLIENT_ERROR invalid flag\r\n"
send "mg mg:a v v\r\n"
expect "CLIENT_ERROR duplicate flag\r\n"
send "mg mg:a Ta\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
send "mg mg:a N\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
send "mg mg:a R\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
send "mg mg:a O"+"o"*32+"\r\n"
expect "CLIENT_ERROR opaque token too long\r\n"
send "mg\r\n"
expect "ERROR\r\n"
send "mg "+"k"*250+" v\r\n"
expect "EN\r\n"
send "mg "+"k"*251+" v\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
# the connection goes on after errors
send "mg mg:a v\r\n"
expect "VA 5\r\nhello\r\n"

# --- issue 28 (found by tools/difffuzz): memcached 1.6.18 step by step
# T, N and R act in the request's order, and t reports the ttl where it
# stands: before N, a new item has none
send "mg i28:g1 t N1000 s\r\n"
expect "HD t-1 s0 W\r\n"
send "mg i28:g1 t\r\n"
expect "HD t{int:999..1000} Z\r\n"
# R before T looks at the old ttl, after T at the new one
send "ms i28:g2 1 T1000\r\nx\r\n"
expect "HD\r\n"
send "mg i28:g2 R100 T50 t\r\n"
expect "HD t{int:49..50}\r\n"
send "mg i28:g2 T1000 R100\r\n"
expect "HD\r\n"
send "mg i28:g2 T50 R100 t\r\n"
expect "HD t{int:49..50} W\r\n"
send "mg i28:g2 v\r\n"
expect "VA 1 Z\r\nx\r\n"
# the flags are walked in order: an unknown or repeated letter stops at
# once, a bad token is noted and the last one noted is reported; a bad F
# has no words of its own, a line's are "bad command line format"
send "mg i28:g F\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "mg i28:g F Tx\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
send "mg i28:g Tx F\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
send "mg i28:g Tx Jx\r\n"
expect "CLIENT_ERROR invalid numeric initial value\r\n"
send "mg i28:g Dx\r\n"
expect "CLIENT_ERROR invalid numeric delta value\r\n"
send "mg i28:g M\r\n"
expect "CLIENT_ERROR incorrect length for M token\r\n"
send "mg i28:g Tx y\r\n"
expect "CLIENT_ERROR invalid flag\r\n"
send "mg i28:g Tx v v\r\n"
expect "CLIENT_ERROR duplicate flag\r\n"
send "mg i28:g \x80\r\n"
expect "CLIENT_ERROR duplicate flag\r\n"
send "mg !!!! Tx b\r\n"
expect "CLIENT_ERROR error decoding key\r\n"
send "mg !!!! b Tx\r\n"
expect "CLIENT_ERROR bad token in command line format\r\n"
send "mg i28:g v v v v v v v v v v v v v v v v v v\r\n"
expect "CLIENT_ERROR options flags are too long\r\n"
# mg takes any mode letter and does not use it
send "mg i28:g MX v\r\n"
expect "EN\r\n"
# base64 as memcached decodes it ("aTI4Omc=" is "i28:g"): bytes outside
# the alphabet are skipped, what follows the padding is ignored, groups
# must be whole
send "ms aTI4Omc= 1 b\r\nr\r\n"
expect "HD\r\n"
send "mg aTI4!Omc= b v\r\n"
expect "VA 1\r\nr\r\n"
send "mg aTI4Omc=AAAA b v\r\n"
expect "VA 1\r\nr\r\n"
send "mg aTI4Omc b v\r\n"
expect "CLIENT_ERROR error decoding key\r\n"
# a NUL ends the line
send "mg i28:gnul v\0 v\r\n"
expect "EN\r\n"
