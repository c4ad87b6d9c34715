import Foundation
import JournalCodec
import Testing
@testable import ListModel

/// Snapshot deltas (SNAPSHOT.md §6): a delta with its base decodes to exactly the state a whole
/// snapshot holds, and anything else is refused.
@Suite struct SnapshotDeltaTests {
    /// A list of `count` items added one after another by alice, `skipping` some of them (as a
    /// compaction that purged them would leave it), then `extra` more.
    static func list(count: Int, skipping: Set<Int> = [], extra: Int = 0, markingOff: Set<Int> = []) -> [JournalEntry] {
        var out: [JournalEntry] = []
        for n in 0..<(count + extra) where !skipping.contains(n) {
            out.append(add("e\(n)", "i\(n)", "item \(n)", after: n == 0 ? nil : "i\(n - 1)", at: UInt64(n) * 1_000))
        }
        for n in markingOff.sorted() { out.append(change("m\(n)", .markOff(item: id("i\(n)")), at: 10_000_000 + UInt64(n))) }
        return out
    }

    static func base(_ entries: [JournalEntry], sequence: UInt64 = 100) -> [UInt8] {
        SnapshotCodec.encode(reducer: replay(entries), incarnation: 3, sequence: sequence)
    }

    @Test func deltaWithItsBaseDecodesToTheWholeSnapshotsState() throws {
        let base = Self.base(Self.list(count: 400))
        let now = replay(Self.list(count: 400, skipping: [3, 4, 5, 200], extra: 10, markingOff: [7, 300]))
        let delta = try #require(SnapshotDelta.encode(reducer: now, incarnation: 3, sequence: 500, base: base))
        let (header, reducer) = try SnapshotDelta.decode(delta, base: base)
        #expect(header.isDelta && header.sequence == 500 && header.minor == SnapshotCodec.deltaMinor)
        #expect(SnapshotCodec.encode(reducer: reducer, incarnation: 3, sequence: 500)
                == SnapshotCodec.encode(reducer: now, incarnation: 3, sequence: 500))
        #expect(reducer.state() == now.state())
    }

    /// The encoder's table of base records finds every record by its id, text or UUID, and
    /// nothing else; an id held twice names its last record.
    @Test func theBaseRecordsAreFoundByTheirIDs() throws {
        let body = SnapshotCodec.encodeBody(replay(withSomeUUIDs(Self.list(count: 3_000, markingOff: [5, 700]))))
        let other = SnapshotCodec.encodeBody(replay(Self.list(count: 3_000, skipping: Set(0..<1_500), extra: 200)))
        let records = try SnapshotDelta.layout(body).records
        let others = try SnapshotDelta.layout(other).records
        body.withUnsafeBytes { b in
            let byID = SnapshotDelta.RecordsByID(records, in: b)
            for (k, rec) in records.enumerated() { #expect(byID.find(b, rec.id) == k) }
            other.withUnsafeBytes { o in
                let inBoth = Set(records.map { Array(b[$0.id]) })
                for rec in others { #expect((byID.find(o, rec.id) != nil) == inBoth.contains(Array(o[rec.id]))) }
            }
            let twice = SnapshotDelta.RecordsByID([records[0], records[1], records[0]], in: b)
            #expect(twice.find(b, records[0].id) == 2 && twice.find(b, records[1].id) == 1 && twice.find(b, records[2].id) == nil)
        }
    }

    @Test func deltaHoldsOnlyWhatChanged() throws {
        let base = Self.base(Self.list(count: 2_000))
        let now = replay(Self.list(count: 2_000, skipping: [10], extra: 1))
        let delta = try #require(SnapshotDelta.encode(reducer: now, incarnation: 3, sequence: 500, base: base, compress: false))
        // One removed id, the new item and the record after the removed one (its anchor changed).
        #expect(delta.count < 200)
        #expect(base.count > 20 * delta.count)
    }

    @Test func decodedDeltaContinuesLikeAReplay() throws {
        let first = Self.list(count: 50)
        let later = Self.list(count: 50, skipping: [0, 1], extra: 5)
        let tail = [change("t1", .delete(item: id("i20")), at: 20_000_000), add("t2", "n1", "New", after: "i2", at: 20_000_001)]
        let delta = try #require(SnapshotDelta.encode(reducer: replay(later), incarnation: 3, sequence: 500, base: Self.base(first)))
        var r = try SnapshotDelta.decode(delta, base: Self.base(first)).reducer
        r.apply(contentsOf: tail)
        #expect(r.state() == replay(later + tail).state())
        #expect(r.stateDigest() == replay(later + tail).stateDigest())
    }

    @Test func deltaAloneAsksForItsBase() throws {
        let delta = try #require(SnapshotDelta.encode(reducer: replay(Self.list(count: 60, extra: 1)), incarnation: 3, sequence: 500,
                                                      base: Self.base(Self.list(count: 60), sequence: 90)))
        #expect(throws: SnapshotError.deltaNeedsBase(sequence: 90)) { try SnapshotCodec.decode(delta) }
        #expect(try delta.withUnsafeBytes { try SnapshotDelta.base(ofFile: $0) }.sequence == 90)
    }

    @Test func anotherBaseIsRefused() throws {
        let base = Self.base(Self.list(count: 60))
        let delta = try #require(SnapshotDelta.encode(reducer: replay(Self.list(count: 60, extra: 1)), incarnation: 3, sequence: 500, base: base))
        let other = Self.base(Self.list(count: 60, skipping: [1]))
        #expect {
            try SnapshotDelta.decode(delta, base: other)
        } throws: { error in
            if case .baseMismatch = error as? SnapshotError { return true }
            return false
        }
        let elsewhere = Self.base(Self.list(count: 60), sequence: 99)
        #expect { try SnapshotDelta.decode(delta, base: elsewhere) } throws: { ($0 as? SnapshotError).map { if case .baseMismatch = $0 { true } else { false } } ?? false }
    }

    @Test func noDeltaWhenItWouldNotBeSmall() {
        let base = Self.base(Self.list(count: 20))
        #expect(SnapshotDelta.encode(reducer: replay(Self.list(count: 20, skipping: Set(0..<15), extra: 30)), incarnation: 3,
                                     sequence: 500, base: base) == nil)
    }

    @Test func noDeltaAcrossAnotherAuthorTable() {
        let base = Self.base(Self.list(count: 100))
        let now = Self.list(count: 100) + [add("b1", "b1", "Bob's", after: "i99", by: "bob", at: 500_000)]
        #expect(SnapshotDelta.encode(reducer: replay(now), incarnation: 3, sequence: 500, base: base) == nil)
    }

    @Test func noDeltaAgainstAnotherIncarnationOrALaterBase() {
        let base = Self.base(Self.list(count: 100), sequence: 600)
        let now = replay(Self.list(count: 100, extra: 1))
        #expect(SnapshotDelta.encode(reducer: now, incarnation: 3, sequence: 500, base: base) == nil)
        #expect(SnapshotDelta.encode(reducer: now, incarnation: 4, sequence: 700, base: base) == nil)
    }

    /// A delta whose author table is not its base's is refused, not read with the base's records
    /// naming other authors (a writer never makes one; another implementation might).
    @Test func aDeltaWithAnotherAuthorTableIsRefused() throws {
        let baseFile = Self.base(Self.list(count: 10))
        let (baseHeader, baseBody) = try SnapshotCodec.storedBody(baseFile)
        let now = replay(Self.list(count: 10) + [add("b1", "b1", "Bob's", after: "i9", by: "bob", at: 500_000)])
        let body = SnapshotCodec.encodeBody(now)
        let new = try SnapshotDelta.layout(body), old = try SnapshotDelta.layout(baseBody)
        var w = ByteWriter()
        w.u64(100)
        w.u32(baseHeader.bodyCRC)
        w.varint(UInt64(new.prefixEnd))
        w.append(contentsOf: body[0..<new.prefixEnd])
        w.varint(UInt64(old.records.count + 1))
        w.varint(0)
        w.varint(1)
        w.append(contentsOf: body[new.records.last!.bytes])
        let delta = SnapshotCodec.file(body: w.bytes, minor: SnapshotCodec.deltaMinor, flags: SnapshotCodec.flagDelta, zone: zone,
                                       incarnation: 3, sequence: 500, entryCount: UInt64(now.entryCount), digest: now.stateDigest(), compress: false)
        #expect {
            try SnapshotDelta.decode(delta, base: baseFile)
        } throws: { error in
            if case .malformedBody(let why, _) = error as? SnapshotError { return why.contains("author table") }
            return false
        }
    }

    /// Every byte of a delta flipped in turn: refused with a typed error, or (where the flip
    /// lands in a field no check covers) the same state; never a different one.
    @Test func damagedDeltaNeverDecodesToAnotherState() throws {
        let base = Self.base(Self.list(count: 30))
        let now = replay(Self.list(count: 30, skipping: [4], extra: 2))
        let delta = try #require(SnapshotDelta.encode(reducer: now, incarnation: 3, sequence: 500, base: base, compress: false))
        for k in 0..<delta.count {
            var bad = delta
            bad[k] ^= 0x5A
            if let (_, r) = try? SnapshotDelta.decode(bad, base: base) { #expect(r.stateDigest() == now.stateDigest()) }
        }
    }

    /// Spec/vectors/snapshot-delta.txt: the seven-entry example's state after e5 as a base, and
    /// the state after all seven as a delta against it. Regenerate with JOURNALLOG_WRITE_VECTORS=1.
    @Test func deltaVectorMatches() throws {
        let url = packageRoot.appendingPathComponent("Spec/vectors/snapshot-delta.txt")
        let base = SnapshotCodec.encode(reducer: replay(Array(sevenEntryExample.prefix(5))), incarnation: 3, sequence: 5, compress: false)
        let whole = replay(sevenEntryExample)
        // The example is tiny: every record changes, so the half-size rule is not asked here.
        let body = SnapshotCodec.encodeBody(whole)
        let baseHeader = try SnapshotCodec.storedBody(base).header
        let deltaBody = try #require(SnapshotDelta.deltaBody(body, against: try SnapshotCodec.storedBody(base).body,
                                                             base: .init(sequence: 5, bodyCRC: baseHeader.bodyCRC)))
        let delta = SnapshotCodec.file(body: deltaBody, minor: SnapshotCodec.deltaMinor, flags: SnapshotCodec.flagDelta, zone: zone,
                                       incarnation: 3, sequence: 7, entryCount: 7, digest: whole.stateDigest(), compress: false)
        func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            let text = """
            # Snapshot delta (SNAPSHOT.md §6): base is the state of the seven-entry example of MERGE.md §1
            # after its first five entries (zone List-db6a6e29, incarnation 3, sequence 5); delta is the
            # state after all seven (sequence 7) against it. Both stored uncompressed. digest is
            # ListState.digest of the state the two make (MERGE.md §8), the same as vectors/snapshot.txt's.

            digest: \(String(format: "%016llx", whole.stateDigest()))
            base: \(hex(base))
            delta: \(hex(delta))

            """
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let fields = try vectorFields(url)
        #expect(fields["base"] == hex(base))
        #expect(fields["delta"] == hex(delta))
        #expect(fields["digest"] == String(format: "%016llx", whole.stateDigest()))
        let decoded = try SnapshotDelta.decode(delta, base: base)
        #expect(SnapshotCodec.encode(reducer: decoded.reducer, incarnation: 3, sequence: 7) == SnapshotCodec.encode(reducer: whole, incarnation: 3, sequence: 7))
    }
}
