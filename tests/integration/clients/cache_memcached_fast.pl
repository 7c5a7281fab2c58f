#!/usr/bin/perl
# Cache::Memcached::Fast against kurad: serialised references (stored with
# a flag), utf8, get_multi, incr/decr, cas via gets, expiry.
# Run under with_kurad, which provides KURA_HOST and KURA_PORT.
use strict;
use warnings;
use Cache::Memcached::Fast;
use Time::HiRes qw(time sleep);

my $tests = 0;
my $failed = 0;

sub ok {
    my ($cond, $name) = @_;
    $tests++;
    if ($cond) {
        print "ok $tests - $name\n";
    } else {
        $failed++;
        print "not ok $tests - $name\n";
    }
}

sub wait_for {
    my ($cond, $timeout) = @_;
    my $deadline = time() + $timeout;
    while (time() < $deadline) {
        return 1 if $cond->();
        sleep(0.05);
    }
    return $cond->();
}

my $server = "$ENV{KURA_HOST}:$ENV{KURA_PORT}";
my $m = Cache::Memcached::Fast->new({
    servers => [$server],
    utf8 => 1,
    connect_timeout => 5,
    io_timeout => 5,
});

ok($m->set('pl:scalar', 'hello'), 'set scalar');
ok(($m->get('pl:scalar') // '') eq 'hello', 'get scalar');

my $ref = { user => 42, tags => [qw(a b c)] };
ok($m->set('pl:ref', $ref), 'set reference (Storable, flag bit)');
my $back = $m->get('pl:ref');
ok(ref $back eq 'HASH' && $back->{user} == 42 && $back->{tags}[2] eq 'c',
   'reference comes back thawed');

ok($m->set('pl:utf8', "caf\x{e9} \x{263a}"), 'set utf8');
ok(($m->get('pl:utf8') // '') eq "caf\x{e9} \x{263a}", 'utf8 round trip');

$m->set("pl:k$_", "v$_") for 1 .. 20;
my $multi = $m->get_multi(map { "pl:k$_" } 1 .. 20, 'pl:absent');
ok(scalar(keys %$multi) == 20 && $multi->{'pl:k7'} eq 'v7', 'get_multi');

$m->set('pl:n', 10);
ok($m->incr('pl:n', 5) == 15, 'incr');
ok($m->decr('pl:n', 100) == 0, 'decr floors at 0');
ok(!defined $m->incr('pl:none', 1) || !$m->incr('pl:none', 1),
   'incr on a missing key');

ok($m->add('pl:add', 1), 'add new');
ok(!$m->add('pl:add', 2), 'add existing fails');
ok($m->replace('pl:add', 3), 'replace');
ok($m->append('pl:add', 'x') && $m->get('pl:add') eq '3x', 'append');
ok($m->prepend('pl:add', 'y') && $m->get('pl:add') eq 'y3x', 'prepend');

my $g = $m->gets('pl:scalar');
ok(ref $g eq 'ARRAY' && $g->[0] > 0, 'gets returns a cas');
ok($m->cas('pl:scalar', $g->[0], 'new'), 'cas with current value');
ok(!$m->cas('pl:scalar', $g->[0], 'newer'), 'cas with stale value fails');
ok($m->get('pl:scalar') eq 'new', 'cas stored');

ok($m->delete('pl:scalar'), 'delete');
ok(!defined $m->get('pl:scalar'), 'deleted');

ok($m->set('pl:exp', 'soon', 1), 'set with expiry');
ok(wait_for(sub { !defined $m->get('pl:exp') }, 5), 'expires');

my $vers = $m->server_versions;
ok(($vers->{$server} // '') =~ /^1\.6/, 'version');

print "1..$tests\n";
exit($failed ? 1 : 0);
