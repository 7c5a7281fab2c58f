<?php
// php-memcached (Debian php-memcached, on libmemcached) against the server:
// the text protocol, and the binary protocol with SASL when the server
// runs with SASL (then the text protocol, which memcached turns off with
// SASL, is skipped).
//
//   php php_memcached_test.php [--host H] [--port P] [--mode text|binary|all]
//
// The address comes from KURA_HOST and KURA_PORT (set by with_kurad) unless
// given. The server is taken to be in SASL mode when KURA_SASL_USER and
// KURA_SASL_PASS are set (or --sasl-user and --sasl-pass are given).
// Without them the binary protocol is checked without SASL, and the SASL
// part is skipped, which the output says. Prints one line per check and
// "N passed, N failed"; exits 1 if a check failed, 77 if the memcached
// extension is not installed. The wait for a TTL to pass on the server's
// clock polls against a deadline.

if (!extension_loaded('memcached')) {
    echo "SKIP: the PHP memcached extension is not installed (Debian package php-memcached)\n";
    exit(77);
}

$opt = getopt('', ['host:', 'port:', 'mode:', 'sasl-user:', 'sasl-pass:']);
$host = $opt['host'] ?? (getenv('KURA_HOST') ?: '127.0.0.1');
$port = (int)($opt['port'] ?? (getenv('KURA_PORT') ?: 0));
$mode = $opt['mode'] ?? 'all';
$user = $opt['sasl-user'] ?? (getenv('KURA_SASL_USER') ?: null);
$pass = $opt['sasl-pass'] ?? (getenv('KURA_SASL_PASS') ?: null);
if ($port <= 0) {
    fwrite(STDERR, "no server: set KURA_HOST/KURA_PORT or give --host/--port\n");
    exit(2);
}
if (!in_array($mode, ['text', 'binary', 'all'], true)) {
    fwrite(STDERR, "--mode is text, binary or all\n");
    exit(2);
}
$sasl = $user !== null && $pass !== null;

$passed = 0;
$failed = 0;

class CheckFailed extends Exception {}

function expect($cond, $what)
{
    if (!$cond) {
        throw new CheckFailed($what);
    }
}

// Once the first check of a protocol fails, the server is taken not to
// speak it: the other checks are failed without running (each would
// otherwise wait out the client's timeouts).
$dead = null;

function check($name, $fn)
{
    global $passed, $failed, $dead;
    if ($dead !== null) {
        $failed++;
        echo "FAIL $name: not run: $dead\n";
        return;
    }
    try {
        $fn();
        $passed++;
        echo "PASS $name\n";
    } catch (Throwable $e) {
        $failed++;
        echo "FAIL $name: " . get_class($e) . ': ' . $e->getMessage() . "\n";
    }
}

function client($host, $port, $binary, $user, $pass)
{
    $m = new Memcached();
    $m->setOption(Memcached::OPT_BINARY_PROTOCOL, $binary);
    $m->setOption(Memcached::OPT_TCP_NODELAY, true);
    $m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 5000);
    $m->setOption(Memcached::OPT_RECV_TIMEOUT, 5000000);
    $m->setOption(Memcached::OPT_SEND_TIMEOUT, 5000000);
    $m->addServer($host, $port);
    if ($user !== null) {
        $m->setSaslAuthData($user, $pass);
    }
    return $m;
}

function run_checks($label, $m)
{
    $p = "php:$label:";
    $rc = function () use ($m) {
        return $m->getResultCode() . ' ' . $m->getResultMessage();
    };

    global $dead, $failed;
    $dead = null;
    $before = $failed;
    check("$label: set/get", function () use ($m, $p, $rc) {
        $m->delete($p . 'k');
        expect($m->get($p . 'k') === false
            && $m->getResultCode() === Memcached::RES_NOTFOUND, 'a deleted key is not found');
        expect($m->set($p . 'k', 'hello'), 'set: ' . $rc());
        expect($m->get($p . 'k') === 'hello', 'get after set');
        expect($m->set($p . 'k', "\x00\xffraw"), 'set bytes');
        expect($m->get($p . 'k') === "\x00\xffraw", 'bytes round trip');
        expect($m->set($p . 'k', 12345), 'set int');
        expect($m->get($p . 'k') === 12345, 'int round trip (flags)');
    });
    if ($failed > $before) {
        $dead = "set/get failed over the $label protocol";
    }

    check("$label: serialised object (flags)", function () use ($m, $p, $rc) {
        $arr = ['user' => 42, 'roles' => ['admin', 'dev'], 'ratio' => 0.5,
            'nested' => ['t' => [1, 2], 'none' => null], 'text' => 'ünï'];
        expect($m->set($p . 'arr', $arr), 'set of an array: ' . $rc());
        expect($m->get($p . 'arr') === $arr, 'the array read back differs');
        $obj = new stdClass();
        $obj->a = 1;
        $obj->b = [true, 'x'];
        expect($m->set($p . 'obj', $obj), 'set of an object');
        expect($m->get($p . 'obj') == $obj, 'the object read back differs');
    });

    check("$label: add/replace", function () use ($m, $p, $rc) {
        $m->delete($p . 'ar');
        expect(!$m->replace($p . 'ar', 'x'), 'replace of a missing key');
        expect($m->add($p . 'ar', 'first'), 'add of a missing key: ' . $rc());
        expect(!$m->add($p . 'ar', 'second'), 'add of an existing key');
        expect($m->getResultCode() === Memcached::RES_NOTSTORED
            || $m->getResultCode() === Memcached::RES_DATA_EXISTS, 'add result: ' . $rc());
        expect($m->get($p . 'ar') === 'first', 'add changed the value');
        expect($m->replace($p . 'ar', 'third'), 'replace of an existing key');
        expect($m->get($p . 'ar') === 'third', 'replace did not store');
    });

    check("$label: cas", function () use ($m, $p, $rc) {
        $m->set($p . 'cas', 'v1');
        $r = $m->get($p . 'cas', null, Memcached::GET_EXTENDED);
        expect(is_array($r) && $r['value'] === 'v1' && $r['cas'] > 0, 'get with cas: ' . $rc());
        $token = $r['cas'];
        expect($m->cas($token, $p . 'cas', 'v2'), 'cas with a fresh token: ' . $rc());
        expect(!$m->cas($token, $p . 'cas', 'v3'), 'cas with a stale token succeeded');
        expect($m->getResultCode() === Memcached::RES_DATA_EXISTS, 'stale cas result: ' . $rc());
        expect($m->get($p . 'cas') === 'v2', 'the conflicting cas stored');
    });

    check("$label: incr/decr (floor at 0)", function () use ($m, $p, $rc) {
        $m->set($p . 'n', '10');
        expect($m->increment($p . 'n', 5) === 15, 'increment: ' . $rc());
        expect($m->decrement($p . 'n', 3) === 12, 'decrement');
        expect($m->decrement($p . 'n', 100) === 0, 'decrement floors at 0');
        expect($m->increment($p . 'n') === 1, 'increment by 1');
        $m->delete($p . 'nx');
        expect($m->increment($p . 'nx', 1) === false
            && $m->getResultCode() === Memcached::RES_NOTFOUND, 'increment of a missing key');
    });

    check("$label: delete", function () use ($m, $p, $rc) {
        $m->set($p . 'd', 'x');
        expect($m->delete($p . 'd'), 'delete of an existing key: ' . $rc());
        expect($m->get($p . 'd') === false, 'the key is still there');
        expect(!$m->delete($p . 'd') && $m->getResultCode() === Memcached::RES_NOTFOUND,
            'delete of a missing key');
    });

    check("$label: 100-key multi-get", function () use ($m, $p, $rc) {
        $data = [];
        for ($i = 0; $i < 100; $i++) {
            $data[sprintf('%sm%03d', $p, $i)] = "value-$i";
        }
        expect($m->setMulti($data), 'setMulti: ' . $rc());
        $got = $m->getMulti(array_merge(array_keys($data), [$p . 'm-missing']));
        expect(is_array($got), 'getMulti: ' . $rc());
        $same = count(array_intersect_assoc($got, $data));
        expect($got == $data, 'getMulti returned ' . count($got) . " of 100 keys, $same equal");
    });

    check("$label: 500 KB value", function () use ($m, $p, $rc) {
        mt_srand(42);
        $v = '';
        for ($i = 0; $i < 128000; $i++) {
            $v .= pack('N', mt_rand()); // incompressible: 512,000 bytes
        }
        expect($m->set($p . 'big', $v), 'set of 500 KB: ' . $rc());
        expect($m->get($p . 'big') === $v, 'the 500 KB value read back differs');
    });

    $res = [];
    if ($dead !== null) {
        $res['error'] = $dead;
    } else try {
        expect($m->set($p . 'ttl', 'short', 3), 'set with a TTL');
        expect($m->set($p . 'touch', 'kept', 3), 'set with a TTL');
        expect($m->get($p . 'ttl') === 'short', 'the item is there at once');
        expect($m->touch($p . 'touch', 100), 'touch: ' . $rc());
        // poll until the shared TTL has passed on the server's clock
        $deadline = microtime(true) + 15;
        while ($m->get($p . 'ttl') !== false && microtime(true) < $deadline) {
            usleep(100000);
        }
        $res['ttl'] = $m->get($p . 'ttl');
        $res['touch'] = $m->get($p . 'touch');
    } catch (Throwable $e) {
        $res['error'] = $e->getMessage();
    }
    check("$label: TTL expiry", function () use ($res) {
        expect(!isset($res['error']), $res['error'] ?? '');
        expect($res['ttl'] === false, 'still there after its TTL');
    });
    check("$label: touch extends the TTL", function () use ($res) {
        expect(!isset($res['error']), $res['error'] ?? '');
        expect($res['touch'] === 'kept', 'touch did not extend the TTL');
    });
}

echo 'php-memcached ' . phpversion('memcached') . ", $host:$port"
    . ($sasl ? " (SASL mode, user $user)" : '') . "\n";

if ($mode === 'text' || $mode === 'all') {
    if ($sasl) {
        echo "SKIP text: the server is in SASL mode, where memcached speaks only the binary protocol\n";
    } else {
        run_checks('text', client($host, $port, false, null, null));
    }
}
if ($mode === 'binary' || $mode === 'all') {
    if ($sasl) {
        if (!Memcached::HAVE_SASL) {
            echo "SKIP binary+SASL: this php-memcached was built without SASL\n";
        } else {
            run_checks('binary+SASL', client($host, $port, true, $user, $pass));
        }
    } else {
        run_checks('binary', client($host, $port, true, null, null));
        echo "SKIP binary+SASL: the server is not in SASL mode (KURA_SASL_USER and KURA_SASL_PASS unset)\n";
    }
}

echo "$passed passed, $failed failed\n";
exit($failed === 0 ? 0 : 1);
