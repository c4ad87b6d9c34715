import JournalLog
import JournalSync

/// The service's zone heads (Spec/SYNC.md §3.11): a tag of what a zone holds now, made from its
/// incarnation, its last change and its mark, so that any record, deletion or compaction changes
/// it. A pure function of the zone's catalog entry: every node of a service computes the same.
enum ZoneHeads {
    /// `h` and 16 lowercase hex digits: a 64-bit mix of the three positions.
    static func of(_ z: ZoneInfo) -> ZoneHead {
        var h: UInt64 = 0x6A09_E667_F3BC_C909
        for v in [z.incarnation, z.lastChange, z.lowWaterMark, z.deletedAt ?? 0] {
            h = mix(h ^ v)
        }
        let hex = String(h, radix: 16)
        return ZoneHead("h" + String(repeating: "0", count: 16 - hex.count) + hex)
    }

    /// SplitMix64's finaliser: every input bit moves every output bit.
    private static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
