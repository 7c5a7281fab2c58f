# Text protocol statistics: the fields monitoring reads (presence and type,
# exact values where the server's configuration fixes them: the reference
# runs with -m 64 and the default 1 MiB item size), the reply shapes of
# "stats settings", "stats items", "stats slabs", "stats sizes" and
# "stats cachedump", and "bytes" following the stored items.
# It wants a server nothing else has used ("fresh"): it compares "bytes"
# before and after, which the server's background reclaiming of other
# transcripts' expired items would move.
fresh
# Checked against memcached 1.6.18 (-m 64 -t 4).

send "flush_all\r\n"
expect "OK\r\n"
send "stats\r\n"
expect-stats
  pid int
  uptime int
  time int -> $now
  version version
  pointer_size int
  rusage_user num
  rusage_system num
  max_connections int
  curr_connections int
  total_connections int
  rejected_connections int
  connection_structures int
  cmd_get int
  cmd_set int
  cmd_flush int
  cmd_touch int
  cmd_meta int
  get_hits int
  get_misses int
  get_expired int
  get_flushed int
  delete_misses int
  delete_hits int
  incr_misses int
  incr_hits int
  decr_misses int
  decr_hits int
  cas_misses int
  cas_hits int
  cas_badval int
  touch_hits int
  touch_misses int
  store_too_large int
  store_no_memory int
  auth_cmds int
  auth_errors int
  bytes_read int
  bytes_written int
  # the reference runs with -m 64 (67108864); kurad reports its disk
  limit_maxbytes int
  accepting_conns = 1
  listen_disabled_num int
  time_in_listen_disabled_us int
  threads int
  conn_yields int
  hash_power_level int
  hash_bytes int
  hash_is_expanding bool
  # idle_kicks is only listed when an idle timeout is set (-o idle_timeout,
  # see text_maxconns.t)
  absent idle_kicks
  evictions int
  reclaimed int
  expired_unfetched int
  evicted_unfetched int
  evicted_active int
  lrutail_reflocked int
  curr_items int
  total_items int
  bytes int -> $b0
  all [a-z_0-9]+
  count 60..200

# bytes grows by the stored item (its key, value and a bounded overhead)
# and shrinks back when it is deleted
send "set st:big 5 0 10000\r\n"+"x"*10000+"\r\n"
expect "STORED\r\n"
send "stats\r\n"
expect-stats
  bytes in $b0+10006..$b0+10300
  bytes int -> $b1
  curr_items int
send "delete st:big\r\n"
expect "DELETED\r\n"
send "stats\r\n"
expect-stats
  bytes = $b0

send "stats settings\r\n"
expect-stats
  maxbytes int
  maxconns int
  tcpport int
  verbosity int
  # on for memcached; off for kurad, which never evicts
  evictions bool
  growth_factor num
  num_threads int
  cas_enabled = yes
  item_size_max = 1048576
  shutdown_command = no
  auth_enabled_sasl = no
  auth_enabled_ascii = no
  flush_enabled = yes
  idle_timeout int
  all [a-z_0-9]+

# small items live in slab class 1; cachedump lists them as
# "ITEM key [size b; expiry s]", expiry 0 when there is none and otherwise
# a Unix time
send "set st:c1 5 0 1\r\na\r\n"
expect "STORED\r\n"
send "set st:c2 5 100 5\r\nhello\r\n"
expect "STORED\r\n"
# (memcached dumps the COLD LRU, where its LRU maintainer moves new items
# shortly after they are stored: polled)
poll 5
send "stats cachedump 1 10\r\n"
expect-lines "END\r\n"
  each "ITEM {re:[^ ]+} [{int} b; {int} s]\r\n"
  has "ITEM st:c1 [1 b; 0 s]\r\n"
  has "ITEM st:c2 [5 b; {int:$now+95..$now+105} s]\r\n"
  count 2..10
# an empty class, then bad arguments
send "stats cachedump 2 10\r\n"
expect "END\r\n"
send "stats cachedump 99 10\r\n"
expect "CLIENT_ERROR Illegal slab id\r\n"
send "stats cachedump\r\n"
expect "CLIENT_ERROR bad command line\r\n"

send "stats items\r\n"
expect-stats
  match items:[0-9]+:number int
  items:1:number in 2..1000
  match items:[0-9]+:age int
  match items:[0-9]+:evicted int
  match items:[0-9]+:outofmemory int
  match items:[0-9]+:reclaimed int
  match items:[0-9]+:lrutail_reflocked int
  all items:[0-9]+:[a-z_]+

send "stats slabs\r\n"
expect-stats
  1:chunk_size int
  1:used_chunks in 2..1000
  match [0-9]+:chunk_size int
  match [0-9]+:chunks_per_page int
  match [0-9]+:total_pages int
  match [0-9]+:total_chunks int
  match [0-9]+:free_chunks int
  match [0-9]+:get_hits int
  match [0-9]+:cmd_set int
  active_slabs int
  total_malloced int
  all ([0-9]+:)?[a-z_]+

# the size histogram is off unless enabled
send "stats sizes\r\n"
expect "STAT sizes_status disabled\r\nEND\r\n"

# the other stats arguments
send "stats reset\r\n"
expect "RESET\r\n"
send "stats detail dump\r\n"
expect "END\r\n"
send "stats bogus\r\n"
expect "ERROR\r\n"
