import JournalLog

/// What a sync engine keeps beside its store (Spec/SYNC.md §7): tokens, per zone its queues and
/// progress. Written atomically (`sync/state`) whenever it changes, so a crash between any two
/// steps leaves a state that matches the log: a token is saved only with what it covers.
package struct SyncState: Equatable, Sendable {
    /// A zone this device syncs.
    package struct Zone: Equatable, Sendable {
        package var zone: ZoneID
        package var scope: DatabaseScope
        /// The service's zone token: everything before it is in the local log, or in `toApply`
        /// or `held` below.
        package var token: ServiceToken?
        /// The database changes named it; its changes are not fetched yet.
        package var needsFetch = false
        /// The service holds the zone (an owner's new list is created there before its first upload).
        package var existsOnService = false
        /// Deleted locally; the service's deletion is still to be made.
        package var pendingDelete = false
        /// The to-apply queue: fetched, stored here, not yet appended to the local log.
        package var toApply: [JournalEntry] = []
        /// Shopping mode: remote entries held back from the visible list until applied.
        package var shopping = false
        package var held: [JournalEntry] = []
        /// Local entries the service refused for good (conflict, invalid): reported, not resent.
        package var rejected: [CompactID] = []
        /// This device's copy holds what the service's does not (a change it refused for good, or
        /// a local entry whose id a fetched one holds with other content): the list is fetched
        /// anew (§7.5) once it can be, after its pushes finish and not while shopping. Fetching
        /// from the token goes on meanwhile (Spec/SYNC.md §7.4).
        package var refetchWanted = false
        /// The list holds changes of a kind a newer version defines (Spec/FORMAT.md §6, 0x40–0x7F):
        /// kept and synced, not shown; each sync reports `newerVersion` for it.
        package var holdsNewerChanges = false
        /// The list stays on this device only: no push creates it on the service until it is
        /// shared (`createList(named:localOnly:)`, or sharing stopped with the list kept here).
        package var localOnly = false
        /// A re-fetch in progress (after `tokenExpired`).
        package var replacing: Replacing?
        package var lastError: String?
        /// The zone's head that `token` covers (Spec/SYNC.md §3.11): a database page naming the
        /// same head has nothing new for this device.
        package var head: ZoneHead?

        package init(zone: ZoneID, scope: DatabaseScope) {
            self.zone = zone
            self.scope = scope
        }
    }

    /// A zone being replaced by the service's copy (Spec/SYNC.md §7, stale devices).
    package struct Replacing: Equatable, Sendable {
        /// The local incarnation being replaced: once it is deleted, the new one is filled.
        package var oldIncarnation: SequenceNumber
        /// The token of the last page appended to the new incarnation (nil: none yet).
        package var token: ServiceToken?
        /// Local changes not yet uploaded, put back on top once the copy is in.
        package var pendingLocal: [JournalEntry]

        package init(oldIncarnation: SequenceNumber, token: ServiceToken? = nil, pendingLocal: [JournalEntry] = []) {
            self.oldIncarnation = oldIncarnation
            self.token = token
            self.pendingLocal = pendingLocal
        }
    }

    package var replica: String
    /// The signed-in account; nil after a sign-out (`notAuthenticated`).
    package var account: String?
    package var databaseTokens: [DatabaseScope: ServiceToken] = [:]
    package var zones: [String: Zone] = [:]
    /// The local hybrid clock's last value: local changes order after everything seen.
    package var clock: UInt64 = 0
    /// Local changes kept across a sign-out, put back when the same account signs in again.
    package var signedOut: [JournalEntry] = []
    /// The account those belong to.
    package var signedOutAccount: String?
    package var lastSync: Int64?
    package var lastError: String?

    package init(replica: String, account: String?) {
        self.replica = replica
        self.account = account
    }
}

/// `sync/state`: `magic "JLSY" | version u8 (3; 1 and 2 are read too) | replica string | account (u8 flag, string) |
/// clock u64 | lastSync (flag, zigzag) | lastError (flag, string) | tokens varint × (scope u8,
/// string) | signedOutAccount (flag, string) | signedOut entries | zones varint × zone | crc32c`.
/// A zone: `owner string | name string | scope u8 | token (flag, string) | flags u8 (needsFetch,
/// existsOnService, pendingDelete, shopping, refetchWanted) | toApply entries | held entries | rejected varint ×
/// id | replacing (flag, incarnation varint, token (flag, string), entries) | lastError (flag,
/// string) | head (flag, string 1–64; version 3)`. Entries: `count varint × (length varint |
/// entry, FORMAT.md §6)`.
package enum SyncStateCodec {
    package static let magic: [UInt8] = [0x4A, 0x4C, 0x53, 0x59]  // "JLSY"
    /// 2 added the zone flag `refetchWanted`; a version-1 file reads the same (the bit is clear),
    /// and an older reader refuses a version-2 file by its version, not as damage to its fields.
    /// 3 added each zone's `head` after its `lastError`; a file of 1 or 2 reads with none.
    /// 4 added the zone flags `holdsNewerChanges` (bit 32) and `localOnly` (bit 64); a file of 1
    /// to 3 reads with them clear.
    package static let version: UInt8 = 4
    /// Refused before reading; a to-apply queue is one page of entries.
    package static let maxFileBytes = 256 << 20

    package static func encode(_ s: SyncState) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: magic)
        w.u8(version)
        w.string(s.replica)
        optional(&w, s.account) { $0.string($1) }
        w.u64(s.clock)
        optional(&w, s.lastSync) { $0.zigzag($1) }
        optional(&w, s.lastError) { $0.string($1) }
        let tokens = s.databaseTokens.sorted { $0.key.rawValue < $1.key.rawValue }
        w.varint(UInt64(tokens.count))
        for (scope, t) in tokens {
            w.u8(scope == .private ? 0 : 1)
            w.string(t.text)
        }
        optional(&w, s.signedOutAccount) { $0.string($1) }
        entries(&w, s.signedOut)
        w.varint(UInt64(s.zones.count))
        for key in s.zones.keys.sorted() {
            let z = s.zones[key]!
            w.string(z.zone.owner)
            w.string(z.zone.name)
            w.u8(z.scope == .private ? 0 : 1)
            optional(&w, z.token) { $0.string($1.text) }
            w.u8((z.needsFetch ? 1 : 0) | (z.existsOnService ? 2 : 0) | (z.pendingDelete ? 4 : 0) | (z.shopping ? 8 : 0)
                 | (z.refetchWanted ? 16 : 0) | (z.holdsNewerChanges ? 32 : 0) | (z.localOnly ? 64 : 0))
            entries(&w, z.toApply)
            entries(&w, z.held)
            w.varint(UInt64(z.rejected.count))
            for id in z.rejected { id.encoded(into: &w) }
            optional(&w, z.replacing) { w, r in
                w.varint(r.oldIncarnation)
                optional(&w, r.token) { $0.string($1.text) }
                entries(&w, r.pendingLocal)
            }
            optional(&w, z.lastError) { $0.string($1) }
            optional(&w, z.head) { $0.string($1.text) }
        }
        w.u32(CRC32C.checksum(w.bytes))
        return w.bytes
    }

    private static func optional<T>(_ w: inout ByteWriter, _ v: T?, _ body: (inout ByteWriter, T) -> Void) {
        guard let v else { return w.u8(0) }
        w.u8(1)
        body(&w, v)
    }

    private static func entries(_ w: inout ByteWriter, _ es: [JournalEntry]) {
        w.varint(UInt64(es.count))
        for e in es {
            let bytes = EntryCodec.encode(e)
            w.varint(UInt64(bytes.count))
            w.append(contentsOf: bytes)
        }
    }

    package static func decode(_ bytes: [UInt8]) throws(CodecError) -> SyncState {
        let r: Result<SyncState, CodecError> = bytes.withUnsafeBytes { b in
            do throws(CodecError) { return .success(try decode(b)) } catch { return .failure(error) }
        }
        return try r.get()
    }

    package static func decode(_ b: UnsafeRawBufferPointer) throws(CodecError) -> SyncState {
        guard b.count <= maxFileBytes else { throw CodecError(.lengthOutOfRange(field: "sync state", length: b.count, limit: maxFileBytes), at: 0) }
        guard b.count >= 9, b.prefix(4).elementsEqual(magic) else { throw CodecError(.invalidValue(field: "sync state magic"), at: 0) }
        let stored = b.loadUnaligned(fromByteOffset: b.count - 4, as: UInt32.self).littleEndian
        guard CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: b[0..<b.count - 4])) == stored else {
            throw CodecError(.invalidValue(field: "sync state crc"), at: b.count - 4)
        }
        var r = ByteReader(b, offset: 4, end: b.count - 4)
        let v = try r.u8()
        guard v >= 1 && v <= version else { throw CodecError(.invalidValue(field: "sync state version \(v) (this build reads 1 to 4)"), at: 4) }
        var s = SyncState(replica: try r.string("replica", limit: Limits.maxAuthorBytes), account: nil)
        s.account = try optional(&r) { (r: inout ByteReader) throws(CodecError) in try r.string("account", limit: 64) }
        s.clock = try r.u64()
        s.lastSync = try optional(&r) { (r: inout ByteReader) throws(CodecError) in try r.zigzag() }
        s.lastError = try optional(&r) { (r: inout ByteReader) throws(CodecError) in try r.string("error", limit: 4_096, allowEmpty: true) }
        let tokenCount = try count(&r, each: 2)
        for _ in 0..<tokenCount {
            let at = r.offset
            let scope = try r.u8()
            guard scope <= 1 else { throw CodecError(.invalidValue(field: "scope"), at: at) }
            s.databaseTokens[scope == 0 ? .private : .shared] = ServiceToken(try r.string("token", limit: 1_024))
        }
        s.signedOutAccount = try optional(&r) { (r: inout ByteReader) throws(CodecError) in try r.string("account", limit: 64) }
        s.signedOut = try entries(&r)
        let zoneCount = try count(&r, each: 6)
        for _ in 0..<zoneCount {
            let at = r.offset
            let owner = try r.string("owner", limit: 64), name = try r.string("zone", limit: Limits.maxZoneBytes)
            guard let id = ZoneID(owner: owner, name: name) else { throw CodecError(.invalidValue(field: "zone"), at: at) }
            let scopeAt = r.offset
            let scope = try r.u8()
            guard scope <= 1 else { throw CodecError(.invalidValue(field: "scope"), at: scopeAt) }
            var z = SyncState.Zone(zone: id, scope: scope == 0 ? .private : .shared)
            z.token = try optional(&r) { (r: inout ByteReader) throws(CodecError) in ServiceToken(try r.string("token", limit: 1_024)) }
            let flagsAt = r.offset
            let flags = try r.u8()
            guard flags & ~(v >= 4 ? 0x7F : 0x1F) == 0 else { throw CodecError(.invalidValue(field: "zone flags"), at: flagsAt) }
            z.needsFetch = flags & 1 != 0
            z.existsOnService = flags & 2 != 0
            z.pendingDelete = flags & 4 != 0
            z.shopping = flags & 8 != 0
            z.refetchWanted = flags & 16 != 0
            z.holdsNewerChanges = flags & 32 != 0
            z.localOnly = flags & 64 != 0
            z.toApply = try entries(&r)
            z.held = try entries(&r)
            let rejected = try count(&r, each: 2)
            for _ in 0..<rejected { z.rejected.append(try CompactID.decoded(&r)) }
            z.replacing = try optional(&r) { (r: inout ByteReader) throws(CodecError) in
                let inc = try r.varint()
                let token = try optional(&r) { (r: inout ByteReader) throws(CodecError) in ServiceToken(try r.string("token", limit: 1_024)) }
                return SyncState.Replacing(oldIncarnation: inc, token: token, pendingLocal: try entries(&r))
            }
            z.lastError = try optional(&r) { (r: inout ByteReader) throws(CodecError) in try r.string("error", limit: 4_096, allowEmpty: true) }
            if v >= 3 {
                z.head = try optional(&r) { (r: inout ByteReader) throws(CodecError) in ZoneHead(try r.string("head", limit: 64)) }
            }
            guard s.zones[id.storeName] == nil else { throw CodecError(.invalidValue(field: "zone (twice)"), at: at) }
            s.zones[id.storeName] = z
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return s
    }

    private static func optional<T>(_ r: inout ByteReader, _ body: (inout ByteReader) throws(CodecError) -> T) throws(CodecError) -> T? {
        let at = r.offset
        switch try r.u8() {
        case 0: return nil
        case 1: return try body(&r)
        default: throw CodecError(.invalidValue(field: "presence flag"), at: at)
        }
    }

    /// A count, refused when the bytes left cannot hold that many elements of `each` bytes.
    private static func count(_ r: inout ByteReader, each: Int) throws(CodecError) -> Int {
        let at = r.offset
        let n = try r.varint()
        guard n <= UInt64(r.remaining / max(1, each)) else {
            throw CodecError(.lengthOutOfRange(field: "count", length: Int(clamping: n), limit: r.remaining / max(1, each)), at: at)
        }
        return Int(n)
    }

    private static func entries(_ r: inout ByteReader) throws(CodecError) -> [JournalEntry] {
        let n = try count(&r, each: 10)
        var out: [JournalEntry] = []
        // Bounded up front: a hostile count grows the array only as entries actually decode.
        out.reserveCapacity(min(n, 1 << 12))
        for _ in 0..<n {
            let len = try r.length("entry", limit: Limits.maxPayloadBytes)
            let bytes = try r.bytes(len)
            out.append(try EntryCodec.decode(bytes))
        }
        return out
    }
}
