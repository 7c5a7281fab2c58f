// memjs (npm; binary protocol only) against a memcached-compatible server:
// the client-matrix checks. Run by tools/client-matrix with NODE_PATH
// pointing at its npm install.
//
//   node memjs_check.js --host H --port P [--mode binary]
//
// memjs has no cas and no multi-get: cas is skipped, the multi-get is 100
// pipelined gets. Client flags come from a serializer (memjs's hook for
// them): JSON values are stored with flags 1. Prints PASS/FAIL/SKIP lines
// and "N passed, N failed"; exits 1 on a failure.
'use strict';
const memjs = require('memjs');
const crypto = require('crypto');

function arg(name, dflt) {
  const i = process.argv.indexOf('--' + name);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const host = arg('host', process.env.KURA_HOST || '127.0.0.1');
const port = arg('port', process.env.KURA_PORT);
if (arg('mode', 'binary') !== 'binary') {
  console.log('SKIP: memjs speaks only the binary protocol');
  process.exit(77);
}

// JSON objects get flags 1; strings and buffers are stored as they are.
const FLAG_JSON = 1;
const serializer = {
  serialize(opcode, value, extras) {
    if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
      extras = Buffer.from(extras);
      extras.writeUInt32BE(FLAG_JSON, 0);
      return { value: Buffer.from(JSON.stringify(value)), extras };
    }
    return { value, extras };
  },
  deserialize(opcode, value, extras) {
    if (extras && extras.length >= 4 && extras.readUInt32BE(0) === FLAG_JSON) {
      return { value: JSON.parse(value.toString()), extras };
    }
    return { value, extras };
  },
};

const mc = memjs.Client.create(`${host}:${port}`, {
  timeout: 5, conntimeout: 5, retries: 0, serializer,
  logger: { log() {} },
  username: process.env.KURA_SASL_USER, password: process.env.KURA_SASL_PASS,
});
const P = 'memjs:';
let passed = 0;
let failed = 0;

function expect(cond, what) {
  if (!cond) throw new Error(what);
}
let dead = null; // set when set/get fails: the rest would only time out
async function check(name, fn) {
  if (dead) {
    failed++;
    console.log(`FAIL ${name}: not run: ${dead}`);
    return;
  }
  try {
    await fn();
    passed++;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}
const str = (r) => (r && r.value ? r.value.toString() : null);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  console.log(`memjs ${require('memjs/package.json').version}, binary protocol, ${host}:${port}`);
  await check('set/get', async () => {
    await mc.delete(P + 'k');
    expect((await mc.get(P + 'k')).value === null, 'a deleted key reads as null');
    expect(await mc.set(P + 'k', 'hello'), 'set');
    expect(str(await mc.get(P + 'k')) === 'hello', 'get after set');
  });
  if (failed) dead = 'set/get failed';
  await check('serialised object (flags)', async () => {
    const obj = { user: 42, roles: ['admin', 'dev'], nested: { t: [1, 2], none: null }, text: 'ünï' };
    expect(await mc.set(P + 'obj', obj), 'set of an object');
    const r = await mc.get(P + 'obj');
    expect(r.flags && r.flags.readUInt32BE(0) === FLAG_JSON, 'flags not 1');
    expect(JSON.stringify(r.value) === JSON.stringify(obj), 'the object read back differs');
  });
  await check('add/replace', async () => {
    await mc.delete(P + 'ar');
    expect(!(await mc.replace(P + 'ar', 'x')), 'replace of a missing key');
    expect(await mc.add(P + 'ar', 'first'), 'add of a missing key');
    expect(!(await mc.add(P + 'ar', 'second')), 'add of an existing key');
    expect(str(await mc.get(P + 'ar')) === 'first', 'add changed the value');
    expect(await mc.replace(P + 'ar', 'third'), 'replace of an existing key');
    expect(str(await mc.get(P + 'ar')) === 'third', 'replace did not store');
  });
  console.log('SKIP cas: memjs has no gets/cas');
  await check('incr/decr (floor at 0)', async () => {
    await mc.set(P + 'n', '10');
    expect((await mc.increment(P + 'n', 5, {})).value === 15, 'increment');
    expect((await mc.decrement(P + 'n', 3, {})).value === 12, 'decrement');
    expect((await mc.decrement(P + 'n', 100, {})).value === 0, 'decrement floors at 0');
    expect((await mc.increment(P + 'n', 1, {})).value === 1, 'increment by 1');
  });
  await check('delete', async () => {
    await mc.set(P + 'd', 'x');
    expect(await mc.delete(P + 'd'), 'delete of an existing key');
    expect((await mc.get(P + 'd')).value === null, 'the key is still there');
    expect(!(await mc.delete(P + 'd')), 'delete of a missing key');
  });
  await check('100-key multi-get (100 pipelined gets)', async () => {
    const keys = [...Array(100).keys()].map((i) => `${P}m${String(i).padStart(3, '0')}`);
    await Promise.all(keys.map((k, i) => mc.set(k, `value-${i}`)));
    const got = await Promise.all(keys.map((k) => mc.get(k)));
    const same = got.filter((r, i) => str(r) === `value-${i}`).length;
    expect(same === 100, `${same} of 100 values read back`);
  });
  await check('500 KB value', async () => {
    const v = crypto.randomBytes(512000);
    expect(await mc.set(P + 'big', v), 'set of 500 KB');
    const r = await mc.get(P + 'big');
    expect(r.value && Buffer.compare(r.value, v) === 0, 'the 500 KB value read back differs');
  });
  const res = {};
  if (dead) res.error = dead;
  else try {
    expect(await mc.set(P + 'ttl', 'short', { expires: 1 }), 'set with a TTL');
    expect(await mc.set(P + 'touch', 'kept', { expires: 1 }), 'set with a TTL');
    expect(str(await mc.get(P + 'ttl')) === 'short', 'the item is there at once');
    expect(await mc.touch(P + 'touch', 100), 'touch');
    await sleep(2100); // the 1 s TTL must pass on the server's clock
    res.ttl = str(await mc.get(P + 'ttl'));
    res.touch = str(await mc.get(P + 'touch'));
  } catch (e) {
    res.error = e.message;
  }
  await check('TTL expiry', async () => {
    expect(!res.error, res.error);
    expect(res.ttl === null, 'still there after its TTL');
  });
  await check('touch extends the TTL', async () => {
    expect(!res.error, res.error);
    expect(res.touch === 'kept', 'touch did not extend the TTL');
  });
  console.log(`${passed} passed, ${failed} failed`);
  mc.close();
  process.exit(failed ? 1 : 0);
})();
