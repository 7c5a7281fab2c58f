# Stale items: md with I (invalidate) marks an item stale and gives it a new
# cas; mg then returns X (stale) and, to the first client only, W (won the
# right to recache); later clients get Z. A set with the current cas
# recaches it. ms with I and C: a cas older than the item's is accepted but
# stores a stale item. (E, an explicit new cas, came after 1.6.18: refused.)
# Checked against memcached 1.6.18, including the order of W, X and Z.

send "flush_all\r\n"
expect "OK\r\n"

# --- invalidate, win, recache
send "ms sa:a 3 T0 c\r\nold\r\n"
expect "HD c{$c1}\r\n"
send "md sa:a I T30\r\n"
expect "HD\r\n"
send "mg sa:a v c t\r\n"
expect "VA 3 c{$c2 != $c1} t{int:29..30} X W\r\nold\r\n"
send "mg sa:a v c\r\n"
expect "VA 3 c{$c2} Z X\r\nold\r\n"
conn other
send "mg sa:a v\r\n"
expect "VA 3 Z X\r\nold\r\n"
send "mg sa:a s\r\n"
expect "HD s3 Z X\r\n"
conn main
# a set with the old cas is refused; with the current one it recaches
send "ms sa:a 3 C{$c1}\r\nnew\r\n"
expect "EX\r\n"
send "ms sa:a 3 C{$c2} T0 c\r\nnew\r\n"
expect "HD c{$c3 != $c2}\r\n"
send "mg sa:a v c t\r\n"
expect "VA 3 c{$c3} t-1\r\nnew\r\n"

# --- invalidating again: another win for the next client
send "md sa:a I q\r\nmn\r\n"
expect "MN\r\n"
send "mg sa:a c\r\n"
expect "HD c{$c4 != $c3} X W\r\n"
send "md sa:a I\r\n"
expect "HD\r\n"
send "mg sa:a c\r\n"
expect "HD c{$c5 != $c4} X W\r\n"
# a plain set clears the stale state
send "ms sa:a 5\r\nfresh\r\n"
expect "HD\r\n"
send "mg sa:a v\r\n"
expect "VA 5\r\nfresh\r\n"

# --- md I with a cas: only the current cas invalidates
send "mg sa:a c\r\n"
expect "HD c{$c6}\r\n"
send "md sa:a I C{$c6+1}\r\n"
expect "EX\r\n"
send "md sa:a I C{$c6}\r\n"
expect "HD\r\n"
send "mg sa:a v\r\n"
expect "VA 5 X W\r\nfresh\r\n"

# --- ms with I: a lower cas than the item's is accepted and stores a
# stale item; a higher one is refused
send "ms sa:b 3 c\r\nabc\r\n"
expect "HD c{$b1}\r\n"
send "ms sa:b 3 I C1 c\r\nold\r\n"
expect "HD c{$b2 != $b1}\r\n"
send "mg sa:b v c\r\n"
expect "VA 3 c{$b2} X W\r\nold\r\n"
send "mg sa:b v c\r\n"
expect "VA 3 c{$b2} Z X\r\nold\r\n"
send "ms sa:b 3 I C{$b2+1000} c\r\nnew\r\n"
expect "EX c0\r\n"
# with the item's own cas, I stores a good item
send "ms sa:b 3 I C{$b2} c\r\nnew\r\n"
expect "HD c{$b3}\r\n"
send "mg sa:b v c\r\n"
expect "VA 3 c{$b3}\r\nnew\r\n"

# --- N and R on a stale item: X with W/Z as above
send "md sa:b I\r\n"
expect "HD\r\n"
send "mg sa:b N30 v\r\n"
expect "VA 3 X W\r\nnew\r\n"
send "mg sa:b R30 v\r\n"
expect "VA 3 Z X\r\nnew\r\n"

# --- E (explicit cas) is not pinned here: memcached 1.6.18 refuses it
# ("CLIENT_ERROR invalid flag"), kurad takes it as later memcached
# documents it (tests/integration/test_meta.py covers it).
