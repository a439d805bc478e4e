import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * KafkaPattern DIR - do on DIR exactly what an Apache Kafka broker does when it deletes a
 * partition (LogManager.asyncDelete + UnifiedLog.delete), with the same java.nio/java.io calls
 * Kafka uses, and report every step as "OK step" or "FAIL step: what (exception)", then
 * "RESULT PASS|FAIL". Exit status 0 pass, 1 fail, 2 bad usage. Same test as kafka_pattern.cc.
 *
 * Why: on NFS (and libfuse filesystems) a file deleted while a channel or a mapping still holds it
 * is silly-renamed (.nfsXXXX / .fuse_hiddenXXXX), so the final directory delete fails with
 * DirectoryNotEmptyException and the broker takes the whole log dir offline.
 */
public final class KafkaPattern {
    static final int LOG_SIZE = 1 << 20, LOG2_SIZE = 64 << 10, IDX_SIZE = 64 << 10, ENTRIES = 1000;
    static final String SEG0 = "00000000000000000000", SEG1 = "00000000000000001000";
    static final String GRAVEYARD = ".graveyard.nfsshim"; // the shim's own directory: not ours

    interface Body { void run() throws Exception; }

    /** A check that failed without an exception of its own (wrong data, leftovers). */
    static final class Check extends Exception {
        private static final long serialVersionUID = 1L;
        Check(String m) { super(m); }
    }

    static boolean failed = false;
    static String doing = ""; // the operation in progress, named in a FAIL line

    static void fail(String step, String what) {
        failed = true;
        System.out.println("FAIL " + step + ": " + what);
        System.out.flush();
    }

    /** Runs one step; an exception inside becomes its FAIL line. */
    static boolean step(String name, Body body) {
        doing = "";
        try {
            body.run();
        } catch (Check e) {
            fail(name, e.getMessage());
            return false;
        } catch (Exception e) {
            fail(name, (doing.isEmpty() ? "" : doing + " ") + "(" + e + ")");
            return false;
        }
        System.out.println("OK " + name);
        System.out.flush();
        return true;
    }

    static void check(boolean ok, String what) throws Check { if (!ok) throw new Check(what); }

    /** Deterministic, position-dependent content (same formula in kafka_pattern.cc). */
    static byte pat(int pos, int seed) {
        int x = pos * 0x9E3779B1 + seed;
        return (byte) (x ^ (x >>> 15));
    }

    /** Kafka's big-endian index entries, zeros after them. */
    static ByteBuffer indexImage(boolean timeIndex) {
        ByteBuffer b = ByteBuffer.allocate(IDX_SIZE);
        for (int i = 0; i < ENTRIES; i++) {
            if (timeIndex) b.putLong(1700000000000L + 1000L * i);
            b.putInt(i * 10);
            if (!timeIndex) b.putInt(i * 1024);
        }
        return b.clear();
    }

    /** Like Kafka's checkpoint writers: write, sync, close. Never replaces an existing file. */
    static void writeFile(Path p, byte[] data) throws IOException {
        doing = "create " + p;
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(data);
            while (b.hasRemaining()) ch.write(b);
            ch.force(true);
        }
    }

    static byte[] readAll(FileChannel ch, int size, String what) throws IOException, Check {
        doing = "read " + what;
        ByteBuffer b = ByteBuffer.allocate(size);
        while (b.hasRemaining())
            check(ch.read(b, b.position()) > 0, what + ": short read, " + b.position() + " of " + size + " bytes");
        return b.array();
    }

    static void verifyLog(FileChannel ch, int size, int seed, String what) throws IOException, Check {
        byte[] data = readAll(ch, size, what);
        for (int i = 0; i < size; i++)
            check(data[i] == pat(i, seed), what + ": wrong byte at offset " + i);
    }

    /** Kafka's Utils.flushDir after every atomic move. */
    static void flushDir(Path dir) throws IOException {
        doing = "fsync dir " + dir;
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) { ch.force(true); }
    }

    static void move(Path from, Path to) throws IOException { // Utils.atomicMoveWithFallback
        doing = "move " + from + " -> " + to;
        Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
    }

    static Set<String> list(Path dir) {
        String[] names = dir.toFile().list();
        return names == null ? new TreeSet<>() : new TreeSet<>(Arrays.asList(names));
    }

    /** Java has no public unmap: Kafka's ByteBufferUnmapper calls Unsafe.invokeCleaner too. */
    static void unmap(MappedByteBuffer b) throws Exception {
        Class<?> c = Class.forName("sun.misc.Unsafe");
        Field f = c.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        c.getMethod("invokeCleaner", ByteBuffer.class).invoke(f.get(null), b);
    }

    /** Cleanup only: delete entries and the directory, retrying while hidden files go away. */
    static IOException removeTree(Path dir) throws InterruptedException {
        IOException last = null;
        for (int attempt = 0; attempt < 50; attempt++) {
            for (String n : list(dir)) {
                try { Files.deleteIfExists(dir.resolve(n)); } catch (IOException ignored) { }
            }
            try { Files.delete(dir); return null; }
            catch (NoSuchFileException e) { return null; }
            catch (IOException e) { last = e; }
            Thread.sleep(100);
        }
        return last;
    }

    // State shared by the steps.
    static Path base, part, cur, ckpt;
    static boolean madePart, madeCkpt;
    static FileChannel writer, reader, log2;
    static final String[] MAP_NAMES = {SEG0 + ".index", SEG0 + ".timeindex", SEG1 + ".index"};
    static final MappedByteBuffer[] maps = new MappedByteBuffer[3];
    static final String[] SEG_FILES = {SEG0 + ".log", MAP_NAMES[0], MAP_NAMES[1], SEG1 + ".log", MAP_NAMES[2]};
    static IOException walkError, rmdirError;

    static FileChannel makeLog(Path p, int size, int seed) throws IOException {
        doing = "create " + p; // FileRecords.openChannel: CREATE, READ, WRITE; appends at the end
        FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        ByteBuffer chunk = ByteBuffer.allocate(64 << 10); // appended in batches, like produce requests
        for (int off = 0; off < size; off += chunk.capacity()) {
            chunk.clear();
            for (int i = 0; i < chunk.capacity(); i++) chunk.put(i, pat(off + i, seed));
            while (chunk.hasRemaining()) ch.write(chunk);
        }
        ch.force(false);
        return ch;
    }

    static MappedByteBuffer mapIndex(Path p, boolean timeIndex) throws IOException {
        doing = "map index " + p; // AbstractIndex: RandomAccessFile, setLength, map, close the file
        try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
            raf.setLength(IDX_SIZE);
            MappedByteBuffer m = raf.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, IDX_SIZE);
            m.put(indexImage(timeIndex));
            m.force();
            return m;
        } // only the mapping holds the file from here on
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !Files.isDirectory(Paths.get(args[0]))) {
            System.err.println("usage: java KafkaPattern DIR   (DIR: an existing directory on the filesystem under test)");
            System.exit(2);
        }
        base = Paths.get(args[0]);
        final Set<String> before = list(base);
        part = base.resolve("orders-7");
        cur = part; // where the partition directory lives now
        ckpt = base.resolve("replication-offset-checkpoint");

        // a. A partition as a broker leaves it: segments open, indexes held by their mapping only.
        boolean setupOk = step("setup", () -> {
            doing = "mkdir " + part;
            Files.createDirectory(part);
            madePart = true;
            writer = makeLog(part.resolve(SEG_FILES[0]), LOG_SIZE, 1);
            log2 = makeLog(part.resolve(SEG_FILES[3]), LOG2_SIZE, 2);
            for (int i = 0; i < 3; i++) maps[i] = mapIndex(part.resolve(MAP_NAMES[i]), i == 1);
            writeFile(part.resolve("leader-epoch-checkpoint"), "0\n1\n0 0\n".getBytes(StandardCharsets.UTF_8));
            writeFile(part.resolve("partition.metadata"),
                    "version: 0\ntopic_id: q1ZVw8ZkR3OAHk5dlRXzhg\n".getBytes(StandardCharsets.UTF_8));
            doing = "open reader";
            reader = FileChannel.open(part.resolve(SEG_FILES[0]), StandardOpenOption.READ); // a fetch session
        });

        if (setupOk) {
            // b. Checkpoint replace (Utils.atomicMoveWithFallback) while a reader holds the old file.
            step("checkpoint-replace", () -> {
                byte[] oldc = "0\n1\norders 7 0\n".getBytes(StandardCharsets.UTF_8);
                byte[] newc = "0\n1\norders 7 1000\n".getBytes(StandardCharsets.UTF_8);
                writeFile(ckpt, oldc);
                madeCkpt = true;
                doing = "open " + ckpt;
                try (FileChannel held = FileChannel.open(ckpt, StandardOpenOption.READ)) {
                    Path tmp = base.resolve(ckpt.getFileName() + ".tmp");
                    writeFile(tmp, newc);
                    move(tmp, ckpt);
                    flushDir(base);
                    check(Arrays.equals(readAll(held, oldc.length, "held checkpoint fd"), oldc),
                            "held fd does not read the old content");
                    doing = "read " + ckpt;
                    check(Arrays.equals(Files.readAllBytes(ckpt), newc), "checkpoint name does not have the new content");
                }
            });

            // c. Step 1 (LogManager.asyncDelete): rename the directory with everything still open.
            step("rename-dir", () -> {
                Path del = base.resolve("orders-7." + UUID.randomUUID().toString().replace("-", "") + "-delete");
                move(part, del);
                cur = del;
                flushDir(base);
            });

            // d. Step 2 (LocalLog.deleteSegmentFiles): segment files become *.deleted, still open/mapped.
            step("rename-segments", () -> {
                for (String n : SEG_FILES) move(cur.resolve(n), cur.resolve(n + ".deleted"));
                flushDir(cur);
            });

            // e. Step 3: an in-flight fetch still reads the whole segment through its own channel.
            step("fetch-read", () -> verifyLog(reader, LOG_SIZE, 1, "reader channel"));

            // f. Step 4 (Utils.delete): Files.walkFileTree deleting every entry (File.delete, i.e.
            // glibc remove(), for some), then the directory itself in postVisitDirectory.
            step("delete-entries", () -> {
                doing = "walk " + cur;
                Files.walkFileTree(cur, new SimpleFileVisitor<Path>() {
                    int visited; // bound: on libfuse an unlinked hidden file is hidden again under a new name

                    @Override public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) {
                        if (++visited > 100) return FileVisitResult.SKIP_SIBLINGS;
                        String n = f.getFileName().toString();
                        try {
                            if (n.equals("partition.metadata") || n.contains(".timeindex")) {
                                if (!f.toFile().delete()) throw new IOException("File.delete(" + f + ") returned false");
                            } else {
                                Files.delete(f);
                            }
                        } catch (IOException e) {
                            if (walkError == null) walkError = e;
                        }
                        return FileVisitResult.CONTINUE;
                    }

                    @Override public FileVisitResult visitFileFailed(Path f, IOException e) {
                        if (walkError == null) walkError = e;
                        return FileVisitResult.CONTINUE;
                    }

                    @Override public FileVisitResult postVisitDirectory(Path d, IOException e) {
                        if (e != null && walkError == null) walkError = e;
                        try { Files.delete(d); } catch (IOException x) { rmdirError = x; }
                        return FileVisitResult.CONTINUE;
                    }
                });
                doing = "delete entry";
                if (walkError != null) throw walkError;
            });
            boolean rmdirOk = step("rmdir", () -> {
                doing = "delete dir " + cur;
                if (rmdirError != null) throw rmdirError;
                check(!Files.exists(cur), cur + " still exists after delete");
            });
            if (!rmdirOk) {
                Set<String> left = list(cur);
                fail("leftovers", "after delete " + cur + " holds: " + (left.isEmpty() ? "(nothing listed)" : String.join(", ", left)));
            }

            // g. The holders are unaffected by the deletes, and the names are free for reuse at once.
            step("reread-after-delete", () -> {
                verifyLog(reader, LOG_SIZE, 1, "reader channel");
                verifyLog(log2, LOG2_SIZE, 2, "second segment channel");
            });
            step("index-mappings", () -> {
                for (int i = 0; i < 3; i++) {
                    int at = maps[i].duplicate().clear().mismatch(indexImage(i == 1));
                    check(at < 0, MAP_NAMES[i] + ": mapping changed at offset " + at);
                }
            });
            step("recreate-name", () -> {
                doing = "mkdir " + part + " again";
                Files.createDirectory(part);
                madePart = true;
                Path p = part.resolve(SEG_FILES[0]);
                byte[] data = new byte[4096];
                for (int i = 0; i < data.length; i++) data[i] = pat(i, 3);
                writeFile(p, data);
                doing = "read " + p;
                check(Arrays.equals(Files.readAllBytes(p), data), "re-created " + p + " reads wrong data");
                doing = "delete " + p;
                Files.delete(p);
                doing = "delete " + part;
                Files.delete(part);
                madePart = false;
            });
        }

        step("close-all", () -> {
            Exception first = null;
            for (FileChannel ch : new FileChannel[] {writer, reader, log2}) {
                try { if (ch != null) ch.close(); } catch (IOException e) { if (first == null) first = e; }
            }
            for (int i = 0; i < 3; i++) {
                try { if (maps[i] != null) unmap(maps[i]); } catch (Exception e) { if (first == null) first = e; }
                maps[i] = null;
            }
            if (first != null) throw first;
        });

        // Leave DIR as it was: remove what is still there, then compare with the listing at start.
        step("cleanup", () -> {
            StringBuilder what = new StringBuilder();
            for (Path d : new Path[] {cur.equals(part) ? null : cur, madePart ? part : null}) {
                if (d == null || !Files.exists(d)) continue;
                IOException e = removeTree(d);
                if (e != null) what.append("cannot remove ").append(d).append(" (").append(e).append("); ");
            }
            try { if (madeCkpt) Files.deleteIfExists(ckpt); } catch (IOException e) { what.append(e).append("; "); }
            if (!before.contains(ckpt.getFileName() + ".tmp")) Files.deleteIfExists(base.resolve(ckpt.getFileName() + ".tmp"));
            Set<String> extra = new TreeSet<>();
            for (int attempt = 0; attempt < 50; attempt++) { // hidden files vanish after the last close
                extra = list(base);
                extra.removeAll(before);
                extra.remove(GRAVEYARD);
                if (extra.isEmpty()) break;
                Thread.sleep(100);
            }
            if (!extra.isEmpty()) what.append("left in ").append(base).append(": ").append(String.join(", ", extra));
            check(what.length() == 0, what.toString());
        });

        System.out.println("RESULT " + (failed ? "FAIL" : "PASS"));
        System.exit(failed ? 1 : 0);
    }
}
