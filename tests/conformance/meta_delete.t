# Meta delete (md): flags b C I k O q T, and P/L. Checked against
# memcached 1.6.18. (Invalidation with I is followed further in
# meta_stale.t.)

send "flush_all\r\n"
expect "OK\r\n"

send "ms md:a 3\r\nabc\r\n"
expect "HD\r\n"
send "md md:a\r\n"
expect "HD\r\n"
send "mg md:a v\r\n"
expect "EN\r\n"
send "md md:a\r\n"
expect "NF\r\n"

# --- k and O are echoed, on success and on failure
send "ms md:a 3\r\nabc\r\n"
expect "HD\r\n"
send "md md:a k Oxy\r\n"
expect "HD kmd:a Oxy\r\n"
send "md md:a Oxy k\r\n"
expect "NF Oxy kmd:a\r\n"

# --- q: HD is suppressed, NF and EX are not
send "ms md:q 3\r\nabc\r\n"
expect "HD\r\n"
send "md md:q q\r\nmd md:q q\r\nmn\r\n"
expect "NF\r\nMN\r\n"

# --- C: delete only with the current cas
send "ms md:c 3 c\r\nabc\r\n"
expect "HD c{$c}\r\n"
send "md md:c C{$c+1} k\r\n"
expect "EX kmd:c\r\n"
send "md md:c C{$c+1} q\r\nmn\r\n"
expect "EX\r\nMN\r\n"
send "mg md:c v\r\n"
expect "VA 3\r\nabc\r\n"
send "md md:c C{$c}\r\n"
expect "HD\r\n"
send "md md:c C{$c}\r\n"
expect "NF\r\n"

# --- b: base64 key ("bWQ6Yg==" is "md:b")
send "ms md:b 1\r\nx\r\n"
expect "HD\r\n"
send "md bWQ6Yg== b k\r\n"
expect "HD kbWQ6Yg== b\r\n"
send "md bWQ6Yg== b k\r\n"
expect "NF kbWQ6Yg== b\r\n"

# --- T without I: the item is just deleted
send "ms md:t 1\r\nx\r\n"
expect "HD\r\n"
send "md md:t T30\r\n"
expect "HD\r\n"
send "mg md:t v\r\n"
expect "EN\r\n"

# --- I: the item stays, marked stale, with a new cas; T sets its TTL
send "ms md:i 3 T0 c\r\nabc\r\n"
expect "HD c{$i1}\r\n"
send "md md:i I T30\r\n"
expect "HD\r\n"
send "mg md:i v c t\r\n"
expect "VA 3 c{$i2 != $i1} t{int:29..30} X W\r\nabc\r\n"
send "md md:none I\r\n"
expect "NF\r\n"

# --- P and L are ignored
send "ms md:p 1\r\nx\r\n"
expect "HD\r\n"
send "md md:p Pp Lx/\r\n"
expect "HD\r\n"

# --- errors
send "md md:a x\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "md md:a 5\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "md md:a k k\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "md\r\n"
expect "ERROR\r\n"
# (md and ma report a bad base64 key as a flag error)
send "md !!!! b\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "md "+"k"*251+"\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "mn\r\n"
expect "MN\r\n"

# --- issue 28 (found by tools/difffuzz): memcached 1.6.18's words
send "ms i28:d 1\r\nx\r\n"
expect "HD\r\n"
send "md i28:d F\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "md i28:d M\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "md i28:d k O"+"o"*33+"\r\n"
expect "CLIENT_ERROR opaque token too long\r\n"
send "md i28:d q q q q q q q q q q q q q q q q q q\r\n"
expect "CLIENT_ERROR options flags too long\r\n"
# C0 compares, and no item has cas 0
send "md i28:d C0\r\n"
expect "EX\r\n"
send "md i28:d MX k\r\n"
expect "HD ki28:d\r\n"
