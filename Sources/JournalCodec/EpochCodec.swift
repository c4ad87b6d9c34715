/// What a store knows of its own past, kept in `EPOCHS` (Spec/FORMAT.md §2, TOKENS.md §7): the
/// token epochs, and how far it acknowledged appends, so that a log whose end moved back (a
/// removed segment, a cut that was not a torn write, an older copy restored) is refused or made
/// safe instead of reusing sequences that old tokens point past.
package struct EpochRecord: Equatable, Sendable {
    package struct Epoch: Equatable, Sendable {
        /// Random, never 0 except for the epoch of a store from before epochs were kept.
        package var id: UInt64
        /// The first sequence of the epoch: the log held exactly what it holds below this when
        /// the epoch began. A token of an earlier epoch is good only for positions below it.
        package var start: SequenceNumber

        package init(id: UInt64, start: SequenceNumber) {
            self.id = id
            self.start = start
        }
    }

    package var storeID: (UInt64, UInt64)
    /// Every sequence through this was acknowledged (written at a roll, and at a close).
    package var acknowledgedThrough: SequenceNumber
    /// The base of the segment the writer was appending to (0: none recorded): it must exist.
    package var activeSegment: SequenceNumber
    /// Whether the last writer closed the store (then `acknowledgedThrough` is its exact end).
    package var closedCleanly: Bool
    /// Oldest first; the last is the current epoch.
    package var epochs: [Epoch]

    package init(storeID: (UInt64, UInt64), acknowledgedThrough: SequenceNumber, activeSegment: SequenceNumber,
                closedCleanly: Bool, epochs: [Epoch]) {
        self.storeID = storeID
        self.acknowledgedThrough = acknowledgedThrough
        self.activeSegment = activeSegment
        self.closedCleanly = closedCleanly
        self.epochs = epochs
    }

    package static func == (a: EpochRecord, b: EpochRecord) -> Bool {
        a.storeID == b.storeID && a.acknowledgedThrough == b.acknowledgedThrough && a.activeSegment == b.activeSegment
            && a.closedCleanly == b.closedCleanly && a.epochs == b.epochs
    }

    package var current: Epoch { epochs[epochs.count - 1] }

    /// Why a token of `epoch` at `position` may not be answered, or nil when it may (TOKENS.md
    /// §7): its epoch must be known, and no later epoch may have begun at or below its position.
    package func refusal(epoch: UInt64, position: SequenceNumber) -> String? {
        guard let i = epochs.lastIndex(where: { $0.id == epoch }) else {
            return "it was issued under an epoch this store does not know (the store was restored from an older copy, "
                + "or its EPOCHS file was lost or rewritten)"
        }
        if let later = epochs[(i + 1)...].first(where: { $0.start <= position }) {
            return "the log's end moved back to \(later.start - 1) after it was issued at \(position) (a segment was lost or the store restored), "
                + "so what follows may differ"
        }
        return nil
    }
}

/// The `EPOCHS` file: `magic "JLEP" | version u8 (1) | storeID 16 | acknowledgedThrough u64 |
/// activeSegment u64 | flags u8 (bit 0: closed cleanly) | count varint (1 … 4,096) | count ×
/// (id u64 | start u64) | crc32c u32` of everything before it. Integers little-endian.
package enum EpochCodec {
    package static let magic: [UInt8] = [0x4A, 0x4C, 0x45, 0x50]  // "JLEP"
    package static let version: UInt8 = 1
    /// The oldest epochs are dropped past this: their tokens are then refused (safe).
    package static let maxEpochs = 4_096
    package static let maxFileBytes = 4 + 1 + 16 + 8 + 8 + 1 + 3 + maxEpochs * 16 + 4

    package static func encode(_ r: EpochRecord) -> [UInt8] {
        precondition(!r.epochs.isEmpty && r.epochs.count <= maxEpochs)
        var w = ByteWriter(capacity: 48 + r.epochs.count * 16)
        w.append(contentsOf: magic)
        w.u8(version)
        w.u64(r.storeID.0)
        w.u64(r.storeID.1)
        w.u64(r.acknowledgedThrough)
        w.u64(r.activeSegment)
        w.u8(r.closedCleanly ? 1 : 0)
        w.varint(UInt64(r.epochs.count))
        for e in r.epochs {
            w.u64(e.id)
            w.u64(e.start)
        }
        w.u32(CRC32C.extend(0, w.bytes))
        return w.bytes
    }

    package static func decode(_ b: UnsafeRawBufferPointer) throws(CodecError) -> EpochRecord {
        guard b.count <= maxFileBytes else { throw CodecError(.lengthOutOfRange(field: "epochs file", length: b.count, limit: maxFileBytes), at: 0) }
        guard b.count >= 4 + 1 + 4 else { throw CodecError(.truncated, at: b.count) }
        guard b.prefix(4).elementsEqual(magic) else { throw CodecError(.invalidValue(field: "epochs magic"), at: 0) }
        let stored = b.u32(at: b.count - 4)
        guard CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: b[0..<b.count - 4])) == stored else {
            throw CodecError(.invalidValue(field: "epochs crc"), at: b.count - 4)
        }
        var r = ByteReader(b, offset: 4, end: b.count - 4)
        let v = try r.u8()
        guard v == version else { throw CodecError(.invalidValue(field: "epochs version"), at: 4) }
        let id = (try r.u64(), try r.u64())
        let acknowledged = try r.u64()
        let active = try r.u64()
        let flagsAt = r.offset
        let flags = try r.u8()
        guard flags & ~1 == 0 else { throw CodecError(.invalidValue(field: "epochs flags"), at: flagsAt) }
        let countAt = r.offset
        let count = try r.varint()
        guard count >= 1, count <= UInt64(maxEpochs), count * 16 <= UInt64(r.remaining) else {
            throw CodecError(.lengthOutOfRange(field: "epochs count", length: Int(clamping: count), limit: maxEpochs), at: countAt)
        }
        var epochs: [EpochRecord.Epoch] = []
        epochs.reserveCapacity(Int(count))
        var ids = Set<UInt64>()
        for _ in 0..<count {
            let at = r.offset
            let e = EpochRecord.Epoch(id: try r.u64(), start: try r.u64())
            guard e.start >= 1, e.start < 1 << 62, ids.insert(e.id).inserted else {
                throw CodecError(.invalidValue(field: "epoch"), at: at)
            }
            epochs.append(e)
        }
        guard acknowledged < 1 << 62, active < 1 << 62 else { throw CodecError(.invalidValue(field: "epochs positions"), at: 21) }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return EpochRecord(storeID: id, acknowledgedThrough: acknowledged, activeSegment: active, closedCleanly: flags & 1 == 1, epochs: epochs)
    }

    package static func decode(_ bytes: [UInt8]) throws(CodecError) -> EpochRecord {
        let result: Result<EpochRecord, CodecError> = bytes.withUnsafeBytes { b in
            do throws(CodecError) { return .success(try decode(b)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
