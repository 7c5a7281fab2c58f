// spymemcached (Debian libspymemcached-java) against a memcached-compatible
// server, in the text or the binary protocol: the client-matrix checks.
// tools/client-matrix compiles it with javac against
// /usr/share/java/spymemcached.jar.
//
//   java -cp spymemcached.jar:DIR SpyCheck --host H --port P --mode text|binary
//
// The serialised object is a HashMap stored by spymemcached's serializing
// transcoder (Java serialization, marked in the flags). Prints
// PASS/FAIL/SKIP lines and "N passed, N failed"; exits 1 on a failure.

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import net.spy.memcached.CASResponse;
import net.spy.memcached.CASValue;
import net.spy.memcached.ConnectionFactoryBuilder;
import net.spy.memcached.FailureMode;
import net.spy.memcached.MemcachedClient;

public class SpyCheck {
    interface Check {
        void run() throws Exception;
    }

    static int passed = 0;
    static int failed = 0;
    static final String P = "spy:";

    static void check(String name, Check c) {
        try {
            c.run();
            passed++;
            System.out.println("PASS " + name);
        } catch (Throwable e) {
            failed++;
            System.out.println("FAIL " + name + ": " + e);
        }
        System.out.flush();
    }

    static void expect(boolean cond, String what) {
        if (!cond) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String host = System.getenv().getOrDefault("KURA_HOST", "127.0.0.1");
        String port = System.getenv().getOrDefault("KURA_PORT", "");
        String mode = "text";
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--host": host = args[i + 1]; break;
                case "--port": port = args[i + 1]; break;
                case "--mode": mode = args[i + 1]; break;
                default: throw new IllegalArgumentException(args[i]);
            }
        }
        // spymemcached logs through java.util.logging: keep only warnings
        System.setProperty("net.spy.log.LoggerImpl",
                "net.spy.memcached.compat.log.SunLogger");
        Logger.getLogger("net.spy.memcached").setLevel(Level.WARNING);

        ConnectionFactoryBuilder b = new ConnectionFactoryBuilder()
                .setProtocol(mode.equals("binary")
                        ? ConnectionFactoryBuilder.Protocol.BINARY
                        : ConnectionFactoryBuilder.Protocol.TEXT)
                .setOpTimeout(5000)
                .setFailureMode(FailureMode.Cancel);
        final MemcachedClient mc = new MemcachedClient(b.build(),
                Arrays.asList(new InetSocketAddress(host, Integer.parseInt(port))));
        System.out.println("spymemcached, " + mode + " protocol, " + host + ":" + port);

        check("set/get", () -> {
            mc.delete(P + "k").get();
            expect(mc.get(P + "k") == null, "a deleted key reads as null");
            expect(mc.set(P + "k", 0, "hello").get(), "set");
            expect("hello".equals(mc.get(P + "k")), "get after set");
        });
        check("serialised object (flags)", () -> {
            HashMap<String, Object> obj = new HashMap<>();
            obj.put("user", 42);
            obj.put("roles", new ArrayList<>(Arrays.asList("admin", "dev")));
            obj.put("ratio", 0.5);
            expect(mc.set(P + "obj", 0, obj).get(), "set of a map");
            expect(obj.equals(mc.get(P + "obj")), "the map read back differs");
            expect(mc.set(P + "long", 0, 1234567890123L).get(), "set of a long");
            expect(Long.valueOf(1234567890123L).equals(mc.get(P + "long")), "the long read back differs");
        });
        check("add/replace", () -> {
            mc.delete(P + "ar").get();
            expect(!mc.replace(P + "ar", 0, "x").get(), "replace of a missing key");
            expect(mc.add(P + "ar", 0, "first").get(), "add of a missing key");
            expect(!mc.add(P + "ar", 0, "second").get(), "add of an existing key");
            expect("first".equals(mc.get(P + "ar")), "add changed the value");
            expect(mc.replace(P + "ar", 0, "third").get(), "replace of an existing key");
            expect("third".equals(mc.get(P + "ar")), "replace did not store");
        });
        check("cas", () -> {
            mc.set(P + "cas", 0, "v1").get();
            CASValue<Object> cv = mc.gets(P + "cas");
            expect(cv != null && "v1".equals(cv.getValue()), "gets");
            expect(mc.cas(P + "cas", cv.getCas(), "v2") == CASResponse.OK, "cas with a fresh token");
            CASResponse r = mc.cas(P + "cas", cv.getCas(), "v3");
            expect(r == CASResponse.EXISTS, "cas with a stale token: " + r);
            expect("v2".equals(mc.get(P + "cas")), "the conflicting cas stored");
        });
        check("incr/decr (floor at 0)", () -> {
            mc.delete(P + "n").get();
            expect(mc.incr(P + "n", 1, 10) == 10, "incr of a missing key with a default");
            expect(mc.incr(P + "n", 5) == 15, "incr");
            expect(mc.decr(P + "n", 3) == 12, "decr");
            expect(mc.decr(P + "n", 100) == 0, "decr floors at 0");
            expect(mc.incr(P + "n", 1) == 1, "incr by 1");
            mc.delete(P + "nx").get();
            expect(mc.incr(P + "nx", 1) == -1, "incr of a missing key");
        });
        check("delete", () -> {
            mc.set(P + "d", 0, "x").get();
            expect(mc.delete(P + "d").get(), "delete of an existing key");
            expect(mc.get(P + "d") == null, "the key is still there");
            expect(!mc.delete(P + "d").get(), "delete of a missing key");
        });
        check("100-key multi-get", () -> {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                String k = String.format("%sm%03d", P, i);
                keys.add(k);
                mc.set(k, 0, "value-" + i);
            }
            expect(mc.set(P + "m-sync", 0, "x").get(), "set");
            List<String> ask = new ArrayList<>(keys);
            ask.add(P + "m-missing");
            Map<String, Object> got = mc.getBulk(ask);
            int same = 0;
            for (int i = 0; i < 100; i++) {
                if (("value-" + i).equals(got.get(keys.get(i)))) {
                    same++;
                }
            }
            expect(same == 100 && got.size() == 100, got.size() + " keys, " + same + " equal");
        });
        check("500 KB value", () -> {
            byte[] v = new byte[512000];
            new Random(42).nextBytes(v);
            expect(mc.set(P + "big", 0, v).get(), "set of 500 KB");
            expect(Arrays.equals(v, (byte[]) mc.get(P + "big")), "the 500 KB value read back differs");
        });
        final Object[] res = new Object[3];
        try {
            expect(mc.set(P + "ttl", 1, "short").get(), "set with a TTL");
            expect(mc.set(P + "touch", 1, "kept").get(), "set with a TTL");
            expect("short".equals(mc.get(P + "ttl")), "the item is there at once");
            expect(mc.touch(P + "touch", 100).get(), "touch");
            Thread.sleep(2100); // the 1 s TTL must pass on the server's clock
            res[0] = mc.get(P + "ttl");
            res[1] = mc.get(P + "touch");
        } catch (Throwable e) {
            res[2] = e.toString();
        }
        check("TTL expiry", () -> {
            expect(res[2] == null, String.valueOf(res[2]));
            expect(res[0] == null, "still there after its TTL");
        });
        check("touch extends the TTL", () -> {
            expect(res[2] == null, String.valueOf(res[2]));
            expect("kept".equals(res[1]), "touch did not extend the TTL");
        });

        System.out.println(passed + " passed, " + failed + " failed");
        mc.shutdown(2, TimeUnit.SECONDS);
        System.exit(failed == 0 ? 0 : 1);
    }
}
