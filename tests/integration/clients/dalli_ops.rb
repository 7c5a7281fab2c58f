#!/usr/bin/ruby
# dalli_ops: one Dalli client (binary protocol, Debian's ruby-dalli 3.x)
# driven line by line from standard input, so that the failover tests in
# Python (kura_pair.py) can run their load through Dalli itself. Dalli
# does all the network I/O; this script only relays.
#
#   dalli_ops.rb DOWN_RETRY_DELAY HOST:PORT [HOST:PORT...]
#
# Requests, one a line:  "s KEY VALUE" (set, raw, no expiry) and "g KEY".
# Replies, one a line:   "ok" (stored), "no" (not stored), "v VALUE",
# "miss", or "err CLASS: MESSAGE" for whatever Dalli raised.
# Dalli's own log lines (its warnings when a server fails or is marked
# down) go to standard error. Exits 77 if Dalli is not installed.
require 'logger'

begin
  require 'dalli'
rescue LoadError
  puts 'SKIP: dalli is not installed (Debian package ruby-dalli)'
  exit 77
end

down_retry_delay = Float(ARGV.shift)
servers = ARGV
Dalli.logger = Logger.new($stderr)
Dalli.logger.level = Logger::WARN

# The settings doc/failover.md gives.
dc = Dalli::Client.new(servers,
                       failover: true,          # a down server's keys go
                                                # to the next on the ring
                       socket_timeout: 2,       # connect, read, write (s)
                       socket_max_failures: 1,  # down after one failure
                       socket_failure_delay: 0.01,
                       down_retry_delay: down_retry_delay)

$stdout.sync = true
puts "ready dalli #{Dalli::VERSION}"
$stdin.each_line do |line|
  op, key, value = line.chomp.split(' ', 3)
  begin
    case op
    when 's'
      puts(dc.set(key, value, 0, raw: true) ? 'ok' : 'no')
    when 'g'
      v = dc.get(key)
      puts(v.nil? ? 'miss' : "v #{v}")
    else
      puts "err ArgumentError: unknown request #{op.inspect}"
    end
  rescue StandardError => e
    puts "err #{e.class}: #{e.message.tr("\r\n", '  ')}"
  end
end
