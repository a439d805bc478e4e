// A broker-like JVM workload for the shim's throughput figure: append to a log segment,
// keep an mmap'd offset index per segment (fd closed after mapping, as Kafka does), roll
// segments, and delete old segments (rename to .deleted, then delete) while their index
// mappings are still alive. Prints "bytes_per_sec N" after SECONDS.
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.*;
import java.util.ArrayDeque;

public class JvmSegmentBench {
  record Segment(Path log, Path index, FileChannel ch, MappedByteBuffer idx) {}

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args[0]);
    double seconds = Double.parseDouble(args[1]);
    // Kafka rolls at segment.bytes (1 GiB by default); 128 MiB here still rolls and
    // deletes several segments a second at this rate, far more often than a broker.
    long segmentBytes = 128L << 20;
    ByteBuffer batch = ByteBuffer.allocateDirect(16 << 10);
    while (batch.hasRemaining()) batch.put((byte) 'k');
    ArrayDeque<Segment> live = new ArrayDeque<>();
    long bytes = 0, base = 0;
    long end = System.nanoTime() + (long) (seconds * 1e9);
    Segment cur = open(dir, base);
    while (System.nanoTime() < end) {
      batch.rewind();
      bytes += cur.ch.write(batch);
      int pos = (int) ((cur.ch.position() / batch.capacity()) * 8 % cur.idx.capacity());
      cur.idx.putLong(pos, cur.ch.position());
      if (cur.ch.position() >= segmentBytes) {
        live.add(cur);
        base += cur.ch.position();
        cur = open(dir, base);
        if (live.size() > 3) {  // retention: delete the oldest, index still mapped
          Segment old = live.poll();
          Path dl = old.log.resolveSibling(old.log.getFileName() + ".deleted");
          Path di = old.index.resolveSibling(old.index.getFileName() + ".deleted");
          Files.move(old.log, dl);
          Files.move(old.index, di);
          Files.delete(dl);
          Files.delete(di);
          old.ch.close();
        }
      }
    }
    System.out.printf("bytes_per_sec %.0f%n", bytes / seconds);
    for (Segment s : live) { s.ch.close(); Files.deleteIfExists(s.log); Files.deleteIfExists(s.index); }
    cur.ch.close();
    Files.deleteIfExists(cur.log);
    Files.deleteIfExists(cur.index);
  }

  static Segment open(Path dir, long base) throws IOException {
    String n = String.format("%020d", base);
    Path log = dir.resolve(n + ".log"), index = dir.resolve(n + ".index");
    FileChannel ch = FileChannel.open(log, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    MappedByteBuffer idx;
    try (RandomAccessFile raf = new RandomAccessFile(index.toFile(), "rw")) {
      raf.setLength(1 << 20);
      idx = raf.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, 1 << 20);
    }
    return new Segment(log, index, ch, idx);
  }
}
