// The npm "memcached" client (text protocol) against a memcached-compatible
// server: the client-matrix checks. Run by tools/client-matrix with
// NODE_PATH pointing at its npm install.
//
//   node node_memcached_check.js --host H --port P [--mode text]
//
// Prints PASS/FAIL/SKIP lines and "N passed, N failed"; exits 1 on a
// failure.
'use strict';
const Memcached = require('memcached');
const crypto = require('crypto');

function arg(name, dflt) {
  const i = process.argv.indexOf('--' + name);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const host = arg('host', process.env.KURA_HOST || '127.0.0.1');
const port = arg('port', process.env.KURA_PORT);
if (arg('mode', 'text') !== 'text') {
  console.log('SKIP: the memcached npm client speaks only the text protocol');
  process.exit(77);
}

const mc = new Memcached(`${host}:${port}`, {
  timeout: 5000, retries: 0, retry: 1000, failures: 0, idle: 10000,
});
// promise versions of the callback API
const call = (fn, ...args) => new Promise((resolve, reject) => {
  mc[fn](...args, (err, res) => (err ? reject(err) : resolve(res)));
});
// a store the server refused ("Item is not stored") is false, not an error
const store = (fn, ...args) => call(fn, ...args).catch((e) => {
  if (/not stored|exists/i.test(String(e && e.message))) return false;
  throw e;
});

const P = 'nodemc:';
let passed = 0;
let failed = 0;
function expect(cond, what) {
  if (!cond) throw new Error(what);
}
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.message}`);
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  console.log(`memcached (npm) ${require('memcached/package.json').version}, text protocol, ${host}:${port}`);
  await check('set/get', async () => {
    await call('del', P + 'k');
    expect((await call('get', P + 'k')) === undefined, 'a deleted key reads as undefined');
    expect(await call('set', P + 'k', 'hello', 0), 'set');
    expect((await call('get', P + 'k')) === 'hello', 'get after set');
  });
  await check('serialised object (flags)', async () => {
    const obj = { user: 42, roles: ['admin', 'dev'], nested: { t: [1, 2], none: null }, text: 'ünï' };
    expect(await call('set', P + 'obj', obj, 0), 'set of an object');
    const got = await call('get', P + 'obj');
    expect(JSON.stringify(got) === JSON.stringify(obj), 'the object read back differs');
    const arr = [1, 'two', 3.5, [4]];
    expect(await call('set', P + 'arr', arr, 0), 'set of an array');
    expect(JSON.stringify(await call('get', P + 'arr')) === JSON.stringify(arr), 'the array read back differs');
  });
  await check('add/replace', async () => {
    await call('del', P + 'ar');
    expect(!(await store('replace', P + 'ar', 'x', 0)), 'replace of a missing key');
    expect(await store('add', P + 'ar', 'first', 0), 'add of a missing key');
    expect(!(await store('add', P + 'ar', 'second', 0)), 'add of an existing key');
    expect((await call('get', P + 'ar')) === 'first', 'add changed the value');
    expect(await store('replace', P + 'ar', 'third', 0), 'replace of an existing key');
    expect((await call('get', P + 'ar')) === 'third', 'replace did not store');
  });
  await check('cas', async () => {
    await call('set', P + 'cas', 'v1', 0);
    const r = await call('gets', P + 'cas');
    expect(r && r[P + 'cas'] === 'v1' && r.cas, `gets returned ${JSON.stringify(r)}`);
    expect(await store('cas', P + 'cas', 'v2', r.cas, 0), 'cas with a fresh token');
    expect(!(await store('cas', P + 'cas', 'v3', r.cas, 0)), 'cas with a stale token succeeded');
    expect((await call('get', P + 'cas')) === 'v2', 'the conflicting cas stored');
  });
  await check('incr/decr (floor at 0)', async () => {
    await call('set', P + 'n', '10', 0);
    expect((await call('incr', P + 'n', 5)) === 15, 'incr');
    expect((await call('decr', P + 'n', 3)) === 12, 'decr');
    expect((await call('decr', P + 'n', 100)) === 0, 'decr floors at 0');
    expect((await call('incr', P + 'n', 1)) === 1, 'incr by 1');
    await call('del', P + 'nx');
    expect((await call('incr', P + 'nx', 1)) === false, 'incr of a missing key');
  });
  await check('delete', async () => {
    await call('set', P + 'd', 'x', 0);
    expect(await call('del', P + 'd'), 'delete of an existing key');
    expect((await call('get', P + 'd')) === undefined, 'the key is still there');
    expect(!(await call('del', P + 'd')), 'delete of a missing key');
  });
  await check('100-key multi-get', async () => {
    const keys = [...Array(100).keys()].map((i) => `${P}m${String(i).padStart(3, '0')}`);
    for (let i = 0; i < 100; i++) await call('set', keys[i], `value-${i}`, 0);
    const got = await call('getMulti', keys.concat([P + 'm-missing']));
    const same = keys.filter((k, i) => got[k] === `value-${i}`).length;
    expect(same === 100 && Object.keys(got).length === 100, `${Object.keys(got).length} keys, ${same} equal`);
  });
  await check('500 KB value', async () => {
    const v = crypto.randomBytes(512000);
    expect(await call('set', P + 'big', v, 0), 'set of 500 KB');
    const got = await call('get', P + 'big');
    expect(Buffer.isBuffer(got) && Buffer.compare(got, v) === 0, 'the 500 KB value read back differs');
  });
  const res = {};
  try {
    expect(await call('set', P + 'ttl', 'short', 1), 'set with a TTL');
    expect(await call('set', P + 'touch', 'kept', 1), 'set with a TTL');
    expect((await call('get', P + 'ttl')) === 'short', 'the item is there at once');
    expect(await call('touch', P + 'touch', 100), 'touch');
    await sleep(2100); // the 1 s TTL must pass on the server's clock
    res.ttl = await call('get', P + 'ttl');
    res.touch = await call('get', P + 'touch');
  } catch (e) {
    res.error = e && e.message;
  }
  await check('TTL expiry', async () => {
    expect(!res.error, res.error);
    expect(res.ttl === undefined, 'still there after its TTL');
  });
  await check('touch extends the TTL', async () => {
    expect(!res.error, res.error);
    expect(res.touch === 'kept', 'touch did not extend the TTL');
  });
  console.log(`${passed} passed, ${failed} failed`);
  mc.end();
  process.exit(failed ? 1 : 0);
})();
