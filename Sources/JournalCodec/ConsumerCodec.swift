/// One consumer's marks (Spec/COMPACTION.md §3): how far it has processed each zone incarnation,
/// and until when its lease holds them. The compactor never purges above an unexpired mark.
package struct ConsumerState: Equatable, Sendable {
    package struct Mark: Equatable, Sendable {
        package var zone: String
        package var incarnation: SequenceNumber
        /// Everything at or below this the consumer has processed (uploaded, applied, …).
        package var position: SequenceNumber

        package init(zone: String, incarnation: SequenceNumber, position: SequenceNumber) {
            self.zone = zone
            self.incarnation = incarnation
            self.position = position
        }
    }

    package var name: String
    /// Milliseconds since the epoch after which the consumer holds nothing back; nil: never expires.
    package var leaseUntil: Int64?
    package var marks: [Mark]

    package init(name: String, leaseUntil: Int64?, marks: [Mark] = []) {
        self.name = name
        self.leaseUntil = leaseUntil
        self.marks = marks
    }

    package func isExpired(now: Int64) -> Bool { leaseUntil.map { now > $0 } ?? false }
}

/// `consumers/<key>.consumer`: `magic "JLCM" | version u8 (1) | name string | leaseUntil zigzag
/// (−1: none) | count varint | count × (zone string | incarnation varint | position varint) |
/// crc32c u32` of everything before it.
package enum ConsumerCodec {
    package static let magic: [UInt8] = [0x4A, 0x4C, 0x43, 0x4D]  // "JLCM"
    package static let version: UInt8 = 1
    package static let maxMarks = 1 << 20
    package static let maxNameBytes = 255
    /// Refused before reading: bounds what a damaged or hostile file can make us allocate.
    package static let maxFileBytes = 64 << 20

    package static func encode(_ c: ConsumerState) -> [UInt8] {
        var w = ByteWriter(capacity: 32 + c.marks.count * 24)
        w.append(contentsOf: magic)
        w.u8(version)
        w.string(c.name)
        w.zigzag(c.leaseUntil ?? -1)
        w.varint(UInt64(c.marks.count))
        for m in c.marks {
            w.string(m.zone)
            w.varint(m.incarnation)
            w.varint(m.position)
        }
        w.u32(CRC32C.extend(0, w.bytes))
        return w.bytes
    }

    package static func decode(_ b: UnsafeRawBufferPointer) throws(CodecError) -> ConsumerState {
        guard b.count >= magic.count + 1 + 4 else { throw CodecError(.truncated, at: b.count) }
        guard b.prefix(4).elementsEqual(magic) else { throw CodecError(.invalidValue(field: "consumer magic"), at: 0) }
        let body = UnsafeRawBufferPointer(rebasing: b[0..<(b.count - 4)])
        guard CRC32C.extend(0, body) == b.u32(at: b.count - 4) else { throw CodecError(.invalidValue(field: "consumer CRC"), at: b.count - 4) }
        var r = ByteReader(body, offset: 4)
        let v = try r.u8()
        guard v == version else { throw CodecError(.unsupportedEncodingVersion(v), at: 4) }
        let name = try r.string("consumer name", limit: maxNameBytes)
        let leaseAt = r.offset
        let lease = try r.zigzag()
        guard lease >= -1 else { throw CodecError(.invalidValue(field: "leaseUntil"), at: leaseAt) }
        let count = try r.length("mark count", limit: maxMarks)
        var marks: [Mark] = []
        // Each mark takes at least 4 bytes: never reserve more than the file could hold.
        marks.reserveCapacity(min(count, r.remaining / 4))
        for _ in 0..<count {
            let zone = try r.string("zone", limit: Limits.maxZoneBytes)
            let at = r.offset
            let inc = try r.varint()
            let pos = try r.varint()
            guard inc < 1 << 62, pos < 1 << 62 else { throw CodecError(.invalidValue(field: "mark"), at: at) }
            marks.append(Mark(zone: zone, incarnation: inc, position: pos))
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return ConsumerState(name: name, leaseUntil: lease == -1 ? nil : lease, marks: marks)
    }

    package typealias Mark = ConsumerState.Mark
}
