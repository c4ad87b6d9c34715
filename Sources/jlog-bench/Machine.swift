import Foundation
import JournalLog
#if canImport(Glibc)
import Glibc
#endif

/// 1. This machine's limits, measured in the same run as the comparisons.
struct MachineBench {
    let counts: Counts
    let dir: String
    let report: Report

    private func openFile(_ path: String) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { fail("open \(path)", POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
        return fd
    }

    private func check(_ ok: Bool, _ what: String) {
        if !ok { fail(what, POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
    }

    /// Writes `fsyncRecords` 4 KiB records from offset 0, each followed by fdatasync; returns syncs/s.
    private func syncRate(_ fd: Int32) -> Double {
        var block = [UInt8](repeating: 0xA5, count: 4096)
        let t = timed {
            for i in 0..<counts.fsyncRecords {
                block[0] = UInt8(truncatingIfNeeded: i)
                check(pwrite(fd, block, 4096, off_t(i) * 4096) == 4096, "pwrite")
                check(fdatasync(fd) == 0, "fdatasync")
            }
        }
        return Double(counts.fsyncRecords) / t
    }

    /// fdatasync/s appending 4 KiB records to a new file (each sync also commits the size change).
    func fsyncAppend() -> Double {
        let path = dir + "/fsync-append.dat"
        let fd = openFile(path)
        defer { close(fd); unlink(path) }
        return syncRate(fd)
    }

    /// fdatasync/s overwriting 4 KiB records of a file that was zero-filled and synced first.
    func fsyncPrezeroed() -> Double {
        let path = dir + "/fsync-prezeroed.dat"
        let fd = openFile(path)
        defer { close(fd); unlink(path) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let total = counts.fsyncRecords * 4096
        var at = 0
        while at < total {
            let n = min(zeros.count, total - at)
            check(pwrite(fd, zeros, n, off_t(at)) == n, "pwrite")
            at += n
        }
        check(fsync(fd) == 0, "fsync")
        return syncRate(fd)
    }

    /// MB/s writing `seqWriteMiB` × 1 MiB to a new file followed by one fsync.
    func sequentialWrite() -> Double {
        let path = dir + "/seq-write.dat"
        let fd = openFile(path)
        defer { close(fd); unlink(path) }
        var g = SplitMix64(seed: 7)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        chunk.withUnsafeMutableBytes { p in
            for i in 0..<(p.count / 8) { p.storeBytes(of: g.next(), toByteOffset: i * 8, as: UInt64.self) }
        }
        let t = timed {
            for i in 0..<counts.seqWriteMiB {
                check(pwrite(fd, chunk, chunk.count, off_t(i) << 20) == chunk.count, "pwrite")
            }
            check(fsync(fd) == 0, "fsync")
        }
        return Double(counts.seqWriteMiB) * 1_048_576 / t / 1e6
    }

    /// MB/s of fresh memory made usable: an anonymous 64 MiB mapping, one byte written per
    /// 4 KiB page (each write a page fault), then unmapped. What a new array costs to fill before
    /// anything is computed in it; `reducer_apply` reports how many faults it takes.
    func freshMemory() -> Double {
        let bytes = 64 << 20
        let t = timed {
            let p = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            check(p != MAP_FAILED, "mmap")
            let b = p!.assumingMemoryBound(to: UInt8.self)
            for i in stride(from: 0, to: bytes, by: 4096) { b[i] = 1 }
            check(munmap(p, bytes) == 0, "munmap")
        }
        return Double(bytes) / t / 1e6
    }

    func run() {
        var fresh: [Double] = []
        for _ in 0..<counts.runs { fresh.append(freshMemory()) }
        report.emit(Measurement(name: "fresh_memory", system: "machine", unit: "MB/s", runs: fresh,
                                extra: [("mapping_mib", .i(64)), ("us_per_4k_page", .n(4096 / medianOf(fresh))),
                                        ("method", .s("mmap anonymous, write 1 byte per 4 KiB page, munmap"))]))

        var append: [Double] = [], zeroed: [Double] = []
        for r in 0..<counts.runs {
            log("  machine: fdatasync run \(r + 1)/\(counts.runs)")
            append.append(fsyncAppend())
            zeroed.append(fsyncPrezeroed())
        }
        let fsyncParams: [(String, JSON)] = [("record_bytes", .i(4096)), ("records", .i(counts.fsyncRecords))]
        report.emit(Measurement(name: "fdatasync_append", system: "machine", unit: "syncs/s", runs: append,
                                extra: fsyncParams + [("method", .s("pwrite 4 KiB at EOF + fdatasync"))]))
        report.emit(Measurement(name: "fdatasync_prezeroed", system: "machine", unit: "syncs/s", runs: zeroed,
                                extra: fsyncParams + [("method", .s("pwrite 4 KiB into zero-filled, fsynced file + fdatasync"))]))

        var seq: [Double] = []
        for _ in 0..<counts.runs { seq.append(sequentialWrite()) }
        report.emit(Measurement(name: "sequential_write", system: "machine", unit: "MB/s", runs: seq,
                                extra: [("write_bytes", .i(1 << 20)), ("total_mib", .i(counts.seqWriteMiB)), ("method", .s("pwrite 1 MiB × N + one fsync"))]))

        // CRC32C over a 64 MiB buffer.
        var g = SplitMix64(seed: 11)
        var buf = [UInt8](repeating: 0, count: counts.crcBufferMiB << 20)
        buf.withUnsafeMutableBytes { p in
            for i in 0..<(p.count / 8) { p.storeBytes(of: g.next(), toByteOffset: i * 8, as: UInt64.self) }
        }
        var crc: [Double] = []
        var sink: UInt32 = 0
        for _ in 0..<counts.runs {
            let t = timed { for _ in 0..<counts.crcPasses { sink ^= CRC32C.checksum(buf) } }
            crc.append(Double(buf.count * counts.crcPasses) / t / 1e9)
        }
        report.emit(Measurement(name: "crc32c", system: "machine", unit: "GB/s", runs: crc,
                                extra: [("buffer_mib", .i(counts.crcBufferMiB)), ("passes", .i(counts.crcPasses)),
                                        ("hardware", .b(CRC32C.isHardwareAccelerated)), ("sink", .i(Int(sink & 1)))]))
        buf = []

        // LZ4 on batch bodies exactly as BatchCodec builds them: (seqDelta varint, length varint, entry) × 1,000.
        let set = EntrySet.generate(counts.batchSize, seed: 99)
        var body = ByteWriter(capacity: set.encodedBytes + 4 * set.count)
        for (i, e) in set.entries.enumerated() {
            let b = EntryCodec.encode(e)
            body.varint(i == 0 ? 0 : 1)
            body.varint(UInt64(b.count))
            body.append(contentsOf: b)
        }
        let raw = body.bytes
        let packed = raw.withUnsafeBytes { LZ4.compress($0) }
        let reps = max(1, (counts.lz4MiB << 20) / raw.count)
        var comp: [Double] = [], decomp: [Double] = []
        var n = 0
        for _ in 0..<counts.runs {
            let tc = timed { for _ in 0..<reps { n &+= raw.withUnsafeBytes { LZ4.compress($0) }.count } }
            comp.append(Double(raw.count * reps) / tc / 1e6)
            let td = timed { for _ in 0..<reps { n &+= packed.withUnsafeBytes { LZ4.decompress($0, rawLength: raw.count) }!.count } }
            decomp.append(Double(raw.count * reps) / td / 1e6)
        }
        let lz4Params: [(String, JSON)] = [("input_bytes", .i(raw.count)), ("compressed_bytes", .i(packed.count)),
                                           ("compression_ratio", .n(Double(raw.count) / Double(packed.count))),
                                           ("entries_per_batch", .i(set.count)), ("repetitions", .i(reps)),
                                           ("note", .s("MB/s of uncompressed bytes, through JournalCodec.LZ4 (allocates its output)"))]
        report.emit(Measurement(name: "lz4_compress", system: "machine", unit: "MB/s", runs: comp, extra: lz4Params))
        report.emit(Measurement(name: "lz4_decompress", system: "machine", unit: "MB/s", runs: decomp, extra: lz4Params))
        if n == 42 { log("") }
    }
}
