# Binary protocol: delete(q), touch, gat(q), gatk(q), noop, version,
# verbosity, flush(q) with and without a delay, stat, quit(q) and an
# unknown opcode. Checked against memcached 1.6.18.

send-bin flush opaque=1
expect-bin flush opaque=1

# --- delete
send-bin set key="bm:d" flags=0 value="x" opaque=0x10
expect-bin set opaque=0x10 cas={$d1}
send-bin delete key="bm:d" cas=$d1+1 opaque=0x11
expect-bin delete status=key_eexists value="Data exists for key." opaque=0x11
send-bin delete key="bm:d" cas=$d1 opaque=0x12
expect-bin delete opaque=0x12
send-bin delete key="bm:d" opaque=0x13
expect-bin delete status=key_enoent value="Not found" opaque=0x13
send-bin delete key="bm:d" cas=5 opaque=0x14
expect-bin delete status=key_enoent value="Not found" opaque=0x14
send-bin set key="bm:d" flags=0 value="x" opaque=0x15
expect-bin set opaque=0x15 cas={int}
send-bin delete key="bm:d" opaque=0x16
expect-bin delete opaque=0x16
send-bin get key="bm:d" opaque=0x17
expect-bin get status=key_enoent value="Not found" opaque=0x17
# deleteq: silent on success, the miss is reported
send-bin set key="bm:d" flags=0 value="x" opaque=0x18
expect-bin set opaque=0x18 cas={int}
send-bin deleteq key="bm:d" opaque=0x19
send-bin deleteq key="bm:d" opaque=0x1a
send-bin noop opaque=0x1b
expect-bin deleteq status=key_enoent value="Not found" opaque=0x1a
expect-bin noop opaque=0x1b

# --- touch: the response carries the flags, and the item keeps its cas
send-bin set key="bm:t" flags=42 exptime=1 value="touched" opaque=0x20
expect-bin set opaque=0x20 cas={$t1}
send-bin touch key="bm:t" exptime=100 opaque=0x21
expect-bin touch flags=42 opaque=0x21 cas=$t1
send-bin touch key="bm:none" exptime=100 opaque=0x22
expect-bin touch status=key_enoent value="Not found" opaque=0x22

# --- gat / gatk: get and touch; the replies of get / getk
send-bin gat key="bm:t" exptime=100 opaque=0x23
expect-bin gat flags=42 value="touched" opaque=0x23 cas=$t1
send-bin gatk key="bm:t" exptime=100 opaque=0x24
expect-bin gatk flags=42 key="bm:t" value="touched" opaque=0x24 cas=$t1
send-bin gat key="bm:none" exptime=100 opaque=0x25
expect-bin gat status=key_enoent value="Not found" opaque=0x25
send-bin gatk key="bm:none" exptime=100 opaque=0x26
expect-bin gatk status=key_enoent key="bm:none" opaque=0x26
# gatq / gatkq: a miss is silent
send-bin gatq key="bm:none" exptime=100 opaque=0x27
send-bin gatkq key="bm:none" exptime=100 opaque=0x28
send-bin gatq key="bm:t" exptime=100 opaque=0x29
send-bin gatkq key="bm:t" exptime=100 opaque=0x2a
send-bin noop opaque=0x2b
expect-bin gatq flags=42 value="touched" opaque=0x29 cas=$t1
expect-bin gatkq flags=42 key="bm:t" value="touched" opaque=0x2a cas=$t1
expect-bin noop opaque=0x2b
# the touch made the 1 s item outlive its first TTL (wait: TTL must pass)
send-bin set key="bm:gone" flags=0 exptime=1 value="short" opaque=0x2c
expect-bin set opaque=0x2c cas={int}
wait 2.1
send-bin get key="bm:t" opaque=0x2d
expect-bin get flags=42 value="touched" opaque=0x2d cas=$t1
send-bin get key="bm:gone" opaque=0x2e
expect-bin get status=key_enoent value="Not found" opaque=0x2e
# touch with an absolute time in the past (over 30 days: a Unix time) ends
# the item
send-bin touch key="bm:t" exptime=2592001 opaque=0x2f
expect-bin touch flags=42 opaque=0x2f cas=$t1
send-bin get key="bm:t" opaque=0x30
expect-bin get status=key_enoent value="Not found" opaque=0x30

# --- noop, version
send-bin noop opaque=0xdeadbeef
expect-bin noop opaque=0xdeadbeef
send-bin version opaque=0x31
expect-bin version value="{version}" opaque=0x31

# --- verbosity: memcached 1.6.18 does not implement it in the binary
# protocol; with no body it is an unknown command
send-bin verbosity extras="" opaque=0x32
expect-bin verbosity status=unknown_command value="Unknown command" opaque=0x32

# --- an unknown opcode with no body: UNKNOWN_COMMAND, the connection goes on
send-bin 0x44 opaque=0x33
expect-bin 0x44 status=unknown_command value="Unknown command" opaque=0x33
send-bin 0x30 opaque=0x34
expect-bin 0x30 status=unknown_command value="Unknown command" opaque=0x34
send-bin noop opaque=0x35
expect-bin noop opaque=0x35

# --- stat
send-bin stat opaque=0x40
expect-stats bin opaque=0x40
  pid int
  uptime int
  time int
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
  limit_maxbytes int
  accepting_conns bool
  threads int
  curr_items int
  total_items int
  bytes int
  evictions int
  reclaimed int
  all [a-z_0-9]+
send-bin stat key="settings" opaque=0x41
expect-stats bin opaque=0x41
  maxbytes int
  maxconns int
  tcpport int
  evictions str
  cas_enabled str
  item_size_max int
  auth_enabled_sasl = no
send-bin set key="bm:s" flags=0 value="for the slab stats" opaque=0x42
expect-bin set opaque=0x42 cas={int}
send-bin stat key="items" opaque=0x43
expect-stats bin opaque=0x43
  match items:[0-9]+:number int
  match items:[0-9]+:age int
  match items:[0-9]+:evicted int
  match items:[0-9]+:outofmemory int
  all items:[0-9]+:[a-z_]+
send-bin stat key="slabs" opaque=0x44
expect-stats bin opaque=0x44
  match [0-9]+:chunk_size int
  match [0-9]+:chunks_per_page int
  match [0-9]+:total_pages int
  match [0-9]+:used_chunks int
  active_slabs int
  total_malloced int
  all ([0-9]+:)?[a-z_]+
send-bin stat key="sizes" opaque=0x45
expect-stats bin opaque=0x45
  sizes_status = disabled
  count 1
# an unknown stat group: KEY_ENOENT
send-bin stat key="bogus" opaque=0x46
expect-bin stat status=key_enoent value="Not found" opaque=0x46
# reset: just the terminating frame
send-bin stat key="reset" opaque=0x47
expect-bin stat opaque=0x47

# --- flush with a delay: items stay until the delay has passed
send-bin set key="bm:f" flags=0 value="x" opaque=0x50
expect-bin set opaque=0x50 cas={int}
send-bin flush exptime=2 opaque=0x51
expect-bin flush opaque=0x51
send-bin get key="bm:f" opaque=0x52
expect-bin get flags=0 value="x" opaque=0x52 cas={int}
# the delay must pass on the server's 1 s clock: 2 s + 1 s resolution
wait 3.2
send-bin get key="bm:f" opaque=0x53
expect-bin get status=key_enoent value="Not found" opaque=0x53
# flushq: silent
send-bin set key="bm:f" flags=0 value="x" opaque=0x54
expect-bin set opaque=0x54 cas={int}
send-bin flushq opaque=0x55
send-bin get key="bm:f" opaque=0x56
expect-bin get status=key_enoent value="Not found" opaque=0x56

# --- quit: a reply, then the server closes
conn q1
send-bin quit opaque=0x60
expect-bin quit opaque=0x60
expect-closed
# quitq: closes without a reply
conn q2
send-bin quitq opaque=0x61
expect-closed
# requests pipelined after quit are not answered
conn q3
send-bin quit opaque=0x62
send-bin noop opaque=0x63
expect-bin quit opaque=0x62
expect-closed
