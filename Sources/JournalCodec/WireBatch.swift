/// Entries on the wire (Spec/SYNC.md §9, media type `application/vnd.jlog.batch`): the log's own
/// batch payload (FORMAT.md §5.2) between a magic and a CRC32C, so a server checks an upload with
/// the codec and checksum that guard the log, and a client reads a page the same way.
///
/// ```
/// magic   "JLB1"        4 bytes
/// length  u32 LE        the payload's length, 1 … Limits.maxPayloadBytes
/// payload               a batch payload: sequence deltas 0, 1, 1, … (lastDelta = count − 1)
/// crc     u32 LE        CRC32C(length ‖ payload), unchained
/// ```
/// No entries is no bytes at all (an empty page, an empty body).
package enum WireBatch {
    package static let mediaType = "application/vnd.jlog.batch"
    static let magic: [UInt8] = [0x4A, 0x4C, 0x42, 0x31]  // "JLB1"
    /// Bytes around the payload: magic, length, crc.
    package static let overhead = 12

    /// The entries' wire form; compressed as the log compresses batches.
    package static func encode(_ entries: [JournalEntry], compress: Bool = true) -> [UInt8] {
        guard !entries.isEmpty else { return [] }
        return frame(BatchCodec.encode(journalEntries: entries, compress: compress))
    }

    /// A batch payload in its wire frame: magic, length, the payload, CRC32C of length and payload.
    package static func frame(_ payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: payload.count + overhead)
        w.append(contentsOf: magic)
        w.u32(UInt32(payload.count))
        w.append(contentsOf: payload)
        var crc = CRC32C.extend(0, Array(w.bytes[4..<8]))
        crc = CRC32C.extend(crc, payload)
        w.u32(crc)
        return w.bytes
    }

    /// The entries of a wire batch, checked in this order: magic, length (against the bytes
    /// there and the limit, before anything is read on its strength), CRC, the batch's fixed
    /// fields with `count ≤ maxEntries`, contiguous deltas, then every entry (FORMAT.md §6).
    package static func decode(_ bytes: UnsafeRawBufferPointer, maxEntries: Int = Limits.maxBatchEntries) throws(CodecError) -> [JournalEntry] {
        if bytes.isEmpty { return [] }
        guard bytes.count >= overhead + 1 else { throw CodecError(.truncated, at: bytes.count) }
        guard bytes.prefix(4).elementsEqual(magic) else { throw CodecError(.invalidValue(field: "magic (not a jlog wire batch)"), at: 0) }
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[4..<8]))
        let length = Int(try r.u32())
        guard length >= 1, length <= Limits.maxPayloadBytes else {
            throw CodecError(.lengthOutOfRange(field: "payload", length: length, limit: Limits.maxPayloadBytes), at: 4)
        }
        guard length == bytes.count - overhead else {
            throw length > bytes.count - overhead ? CodecError(.truncated, at: bytes.count)
                : CodecError(.trailingBytes(bytes.count - overhead - length), at: 8 + length + 4)
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[8..<(8 + length)])
        var crcReader = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[(8 + length)...]))
        let stored = try crcReader.u32()
        let computed = CRC32C.extend(CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: bytes[4..<8])), payload)
        guard stored == computed else { throw CodecError(.invalidValue(field: "crc"), at: 8 + length) }
        let summary: BatchCodec.Summary
        do throws(CodecError) { summary = try BatchCodec.summary(payload) } catch { throw CodecError(error.kind, at: 8 + error.offset) }
        guard summary.count <= maxEntries else {
            throw CodecError(.lengthOutOfRange(field: "entry count", length: summary.count, limit: maxEntries), at: 8)
        }
        guard summary.lastDelta == UInt64(summary.count - 1) else { throw CodecError(.invalidValue(field: "lastDelta (a wire batch's deltas are 0, 1, 1, …)"), at: 8) }
        do throws(CodecError) {
            return try BatchCodec.decode(payload, firstSequence: 1).map(\.1)
        } catch { throw CodecError(error.kind, at: 8 + error.offset) }
    }

    package static func decode(_ bytes: [UInt8], maxEntries: Int = Limits.maxBatchEntries) throws(CodecError) -> [JournalEntry] {
        let result = bytes.withUnsafeBytes { b -> Result<[JournalEntry], CodecError> in
            do throws(CodecError) { return .success(try decode(b, maxEntries: maxEntries)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
