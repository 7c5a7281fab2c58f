mode maxconns
# The connection limit (server started with -c 32 -t 4, and an idle
# timeout). A connection over the limit gets "ERROR Too many open
# connections" and is closed at once; once connections close, new ones are
# accepted again. Checked against memcached 1.6.18 (where 7 client
# connections fit: the rest of the 32 are reserved file descriptors).

conn main
send "version\r\n"
expect "VERSION {version}\r\n"
fill-conns 64 "ERROR Too many open connections\r\n"
# the one refused is counted
close-filled
await-accept after 10
send "stats\r\n"
expect-stats
  max_connections = 32
  rejected_connections in 1..64
  curr_connections int
  listen_disabled_num int
  time_in_listen_disabled_us int
  accepting_conns = 1
  # with -o idle_timeout set, idle_kicks is listed
  idle_kicks int
send "stats settings\r\n"
expect-stats
  maxconns = 32
  maxconns_fast = yes
  idle_timeout = 3600
