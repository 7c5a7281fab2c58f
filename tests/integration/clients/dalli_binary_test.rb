#!/usr/bin/ruby
# Dalli (Debian's ruby-dalli, 3.x: binary protocol) against the server.
#
#   dalli_binary_test.rb [--host H] [--port P]
#
# The address comes from KURA_HOST and KURA_PORT (set by with_kurad) unless
# given. If KURA_SASL_USER and KURA_SASL_PASS are set (or --sasl-user and
# --sasl-pass), Dalli authenticates with SASL PLAIN. Prints one line per
# check and "N passed, N failed"; exits 1 if a check failed, 77 if Dalli is
# not installed. The wait for a TTL to pass on the server's clock polls
# against a deadline.
require 'optparse'

begin
  require 'dalli'
rescue LoadError
  puts 'SKIP: dalli is not installed (Debian package ruby-dalli)'
  exit 77
end

opts = {
  host: ENV.fetch('KURA_HOST', '127.0.0.1'),
  port: ENV.fetch('KURA_PORT', '').to_i,
  user: ENV['KURA_SASL_USER'],
  pass: ENV['KURA_SASL_PASS']
}
OptionParser.new do |o|
  o.banner = 'usage: dalli_binary_test.rb [--host H] [--port P]'
  o.on('--host H') { |v| opts[:host] = v }
  o.on('--port P', Integer) { |v| opts[:port] = v }
  o.on('--mode M', 'binary only (dalli 3.0 has no other)') do |v|
    abort "dalli #{Dalli::VERSION} speaks only the binary protocol" unless v == 'binary'
  end
  o.on('--sasl-user U') { |v| opts[:user] = v }
  o.on('--sasl-pass P') { |v| opts[:pass] = v }
end.parse!
abort 'no server: set KURA_HOST/KURA_PORT or give --host/--port' if opts[:port].zero?

client_opts = { socket_timeout: 5, socket_max_failures: 1, down_retry_delay: 0.1 }
if opts[:user] && opts[:pass]
  client_opts[:username] = opts[:user]
  client_opts[:password] = opts[:pass]
end
# Dalli logs at INFO on stdout by default; keep the output to the checks.
Dalli.logger.level = Logger::WARN if Dalli.respond_to?(:logger)
mc = Dalli::Client.new("#{opts[:host]}:#{opts[:port]}", client_opts)
P = 'dalli:'.freeze
puts "dalli #{Dalli::VERSION}, binary protocol, #{opts[:host]}:#{opts[:port]}" \
     "#{client_opts[:username] ? " (SASL #{client_opts[:username]})" : ''}"

$passed = 0
$failed = 0

class CheckFailed < StandardError; end

def expect(cond, what)
  raise CheckFailed, what unless cond
end

# A refused store: false, nil, or (dalli 3.0 on KEY_ENOENT, as for replace
# of a missing key) the cas 0 of the error reply.
def refused?(result)
  result.nil? || result == false || result == 0
end

def check(name)
  yield
  $passed += 1
  puts "PASS #{name}"
rescue StandardError => e
  $failed += 1
  puts "FAIL #{name}: #{e.class}: #{e.message}"
ensure
  $stdout.flush
end

check('set/get') do
  mc.delete(P + 'k')
  expect(mc.get(P + 'k').nil?, 'a deleted key reads as nil')
  expect(mc.set(P + 'k', 'hello'), 'set returned false')
  expect(mc.get(P + 'k') == 'hello', 'get after set')
  expect(mc.set(P + 'k', "\x00\xffraw".b, 0, raw: true), 'set raw bytes')
  expect(mc.get(P + 'k') == "\x00\xffraw".b, 'raw bytes round trip')
end

check('serialised object (flags)') do
  obj = { 'user' => 42, roles: %w[admin dev], ratio: 0.5,
          nested: { t: [1, 2], none: nil }, text: 'ünï' }
  expect(mc.set(P + 'obj', obj), 'set of a hash')
  expect(mc.get(P + 'obj') == obj, 'the hash read back differs')
  arr = [1, 'two', 3.0, [4]]
  expect(mc.set(P + 'arr', arr), 'set of an array')
  expect(mc.get(P + 'arr') == arr, 'the array read back differs')
end

check('add/replace') do
  mc.delete(P + 'ar')
  expect(refused?(mc.replace(P + 'ar', 'x')), 'replace of a missing key')
  expect(mc.add(P + 'ar', 'first'), 'add of a missing key')
  expect(refused?(mc.add(P + 'ar', 'second')), 'add of an existing key')
  expect(mc.get(P + 'ar') == 'first', 'add changed the value')
  expect(mc.replace(P + 'ar', 'third'), 'replace of an existing key')
  expect(mc.get(P + 'ar') == 'third', 'replace did not store')
end

check('cas') do
  mc.set(P + 'cas', 'v1')
  value, token = mc.get_cas(P + 'cas')
  expect(value == 'v1' && token.to_i.positive?, "get_cas returned #{value.inspect}, #{token.inspect}")
  expect(mc.set_cas(P + 'cas', 'v2', token), 'set_cas with a fresh token')
  expect(refused?(mc.set_cas(P + 'cas', 'v3', token)), 'set_cas with a stale token succeeded')
  expect(mc.get(P + 'cas') == 'v2', 'the conflicting cas stored')
  # the block form: gets, then a cas set
  expect(mc.cas(P + 'cas') { |v| v + '!' }, 'cas block')
  expect(mc.get(P + 'cas') == 'v2!', 'cas block stored')
end

check('incr/decr (floor at 0)') do
  mc.delete(P + 'n')
  expect(mc.incr(P + 'n', 1, nil, 10) == 10, 'incr of a missing key with an initial value')
  expect(mc.incr(P + 'n', 5) == 15, 'incr')
  expect(mc.decr(P + 'n', 3) == 12, 'decr')
  expect(mc.decr(P + 'n', 100).zero?, 'decr floors at 0')
  expect(mc.incr(P + 'n', 1) == 1, 'incr by 1')
  mc.delete(P + 'nx')
  expect(mc.incr(P + 'nx', 1).nil?, 'incr of a missing key without an initial value')
end

check('delete') do
  mc.set(P + 'd', 'x')
  expect(mc.delete(P + 'd'), 'delete of an existing key')
  expect(mc.get(P + 'd').nil?, 'the key is still there')
  expect(!mc.delete(P + 'd'), 'delete of a missing key')
end

check('100-key multi-get') do
  data = (0...100).to_h { |i| [format('%sm%03d', P, i), "value-#{i}"] }
  data.each { |k, v| expect(mc.set(k, v), "set #{k}") }
  got = mc.get_multi(data.keys + [P + 'm-missing'])
  same = data.count { |k, v| got[k] == v }
  expect(got == data, "get_multi returned #{got.size} of 100 keys, #{same} equal")
end

check('500 KB value') do
  v = Random.new(42).bytes(512_000) # incompressible
  expect(mc.set(P + 'big', v, 0, raw: true), 'set of 500 KB')
  expect(mc.get(P + 'big') == v, 'the 500 KB value read back differs')
end

results = {}
begin
  expect(mc.set(P + 'ttl', 'short', 3), 'set with a TTL')
  expect(mc.set(P + 'touch', 'kept', 3), 'set with a TTL')
  expect(mc.get(P + 'ttl') == 'short', 'the item is there at once')
  expect(mc.touch(P + 'touch', 100), 'touch')
  # poll until the shared TTL has passed on the server's clock
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 15
  sleep 0.1 while !mc.get(P + 'ttl').nil? &&
                  Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  results[:ttl] = mc.get(P + 'ttl')
  results[:touch] = mc.get(P + 'touch')
rescue StandardError => e
  results[:error] = "#{e.class}: #{e.message}"
end
check('TTL expiry') do
  expect(!results[:error], results[:error])
  expect(results[:ttl].nil?, 'still there after its TTL')
end
check('touch extends the TTL') do
  expect(!results[:error], results[:error])
  expect(results[:touch] == 'kept', 'touch did not extend the TTL')
end

puts "#{$passed} passed, #{$failed} failed"
exit($failed.zero? ? 0 : 1)
