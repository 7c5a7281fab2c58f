# Meta no-op (mn) and meta debug (me). mn answers MN (arguments are
# ignored); it ends pipelines of quiet meta commands. me prints an item's
# internal data as key=value pairs: exp (-1 for none, see below),
# la (seconds since last access), cas, fetch (yes/no), cls (slab class),
# size. Checked against memcached 1.6.18; the values of la, cls and size
# are the server's own, only their form is checked.

send "mn\r\n"
expect "MN\r\n"
send "mn foo bar\r\n"
expect "MN\r\n"
# mn after quiet commands that were all silent, and mixed with text commands
send "ms mn:a 1 q\r\nx\r\nmg mn:none q v\r\nmd mn:none2 q\r\nmn\r\n"
expect "NF\r\nMN\r\n"
send "get mn:a\r\nmn\r\nversion\r\n"
expect "VALUE mn:a 0 1\r\nx\r\nEND\r\nMN\r\nVERSION {version}\r\n"

# --- me
send "ms me:a 5 T0 c\r\nhello\r\n"
expect "HD c{$c}\r\n"
send "me me:a\r\n"
expect "ME me:a exp=-1 la={int} cas={$c} fetch=no cls={int} size={int}\r\n"
send "mg me:a v\r\n"
expect "VA 5\r\nhello\r\n"
send "me me:a\r\n"
expect "ME me:a exp=-1 la={int:0..2} cas={$c} fetch=yes cls={int} size={int}\r\n"
send "ms me:t 1 T100\r\nx\r\n"
expect "HD\r\n"
send "me me:t\r\n"
# (1.6.18 prints exp with the sign reversed for an item with a TTL: the
# time since the expiry, negative while it lies ahead; later versions fixed
# it, and kurad prints the time left, as they do)
expect "ME me:t exp={re:-?(99|100)} la={int} cas={int} fetch=no cls={int} size={int}\r\n"
send "me me:none\r\n"
expect "EN\r\n"
# b: the key in base64; shown as the item was stored (text here)
send "me bWU6YQ== b\r\n"
expect "ME me:a exp=-1 la={int} cas={$c} fetch=yes cls={int} size={int}\r\n"
send "ms AQID 2 b\r\nab\r\n"
expect "HD\r\n"
send "me AQID b\r\n"
expect "ME AQID exp=-1 la={int} cas={int} fetch=no cls={int} size={int}\r\n"
# errors
send "me\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "me "+"k"*251+"\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "mn\r\n"
expect "MN\r\n"

# --- issue 28 (found by tools/difffuzz): me reads only the key and a b
# right after it ("aTI4Om1l" is "i28:me")
send "me i28:nothing v v y\r\n"
expect "EN\r\n"
send "ms aTI4Om1l 1 b\r\nx\r\n"
expect "HD\r\n"
send "me aTI4Om1l x b\r\n"
expect "EN\r\n"
send "me aTI4Om1l b x x\r\n"
expect "ME aTI4Om1l exp=-1 la={int} cas={int} fetch=no cls={int} size={int}\r\n"
# a key that does not decode is a bad command line
send "me aTI4Om1 b\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "mn\r\n"
expect "MN\r\n"
