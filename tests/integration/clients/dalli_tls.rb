#!/usr/bin/ruby
# dalli_tls: Ruby Dalli (binary protocol) over TLS with an ssl_context,
# for tls_clients_test.py.
#
#   dalli_tls.rb write|read HOST:PORT CA_FILE
#
# "write" stores dl:* keys (a plain value, a hash, a counter) and a cas
# update; "read", after the server restarted, reads them back, does a cas
# and a delete. Prints "ok" and exits 0, or raises. Exits 77 without Dalli.
require 'openssl'
require 'logger'

begin
  require 'dalli'
rescue LoadError
  puts 'SKIP: dalli is not installed (Debian package ruby-dalli)'
  exit 77
end

phase, server, ca = ARGV
ctx = OpenSSL::SSL::SSLContext.new
ctx.verify_mode = OpenSSL::SSL::VERIFY_PEER
ctx.ca_file = ca
Dalli.logger = Logger.new($stderr)
Dalli.logger.level = Logger::WARN
dc = Dalli::Client.new(server, ssl_context: ctx, socket_timeout: 5)

def check(what, got, want)
  raise "#{what}: got #{got.inspect}, want #{want.inspect}" unless got == want
end

case phase
when 'write'
  check('set', dc.set('dl:plain', 'session data') != false, true)
  check('set hash', dc.set('dl:hash', { 'user' => 42, 'roles' => %w[a b] }) != false, true)
  dc.set('dl:cas', 'one')
  check('cas', dc.cas('dl:cas') { |v| v + '+two' } != false, true)
  check('get', dc.get('dl:cas'), 'one+two')
  dc.set('dl:gone', 'x')
  check('delete', dc.delete('dl:gone'), true)
  check('get deleted', dc.get('dl:gone'), nil)
when 'read'
  check('get', dc.get('dl:plain'), 'session data')
  check('get hash', dc.get('dl:hash'), { 'user' => 42, 'roles' => %w[a b] })
  check('get cas', dc.get('dl:cas'), 'one+two')
  check('cas', dc.cas('dl:cas') { |v| v + '+three' } != false, true)
  check('get', dc.get('dl:cas'), 'one+two+three')
  check('delete', dc.delete('dl:plain'), true)
  check('get deleted', dc.get('dl:plain'), nil)
  check('gone stays gone', dc.get('dl:gone'), nil)
else
  raise "unknown phase #{phase}"
end
dc.close
puts 'ok'
