import JournalLog
import JournalSync

/// What the service knows of a sealed zone's keys (Spec/SEALING.md §5.1): the newest epoch whose
/// key record the zone holds, and whether that epoch owes a rotation. Read from the zone's own
/// log (key records and rotation-due markers are never purged) the first time a node needs it,
/// and kept up to date by the node's own appends; over a shared database an append refuses with
/// `keysMoved` when another node moved the epoch meanwhile, and the caller reads it afresh.
struct ZoneEpochs: Sendable, Equatable {
    /// The zone incarnation the epochs are of.
    var incarnation: SequenceNumber
    /// The newest epoch begun (0: no key record yet).
    var epoch: UInt64 = 0
    /// Whether `epoch` owes a rotation: a member left without one.
    var rotationDue = false
    /// The key id `epoch`'s record wraps to, by account: a member whose published keys are no
    /// longer these changed its keys, and the epoch owes a rotation for it (SEALING.md §4.7).
    var wraps: [String: [UInt8]] = [:]
    /// Whether a link key of `epoch` is in the zone (SEALING.md §4.8): a join then owes a rotation.
    var linkOpen = false

    /// Applies one entry of the zone, in log order.
    mutating func observe(_ e: JournalEntry) {
        guard case .opaque(let kind, let body) = e.operation else { return }
        if kind == EpochKeyRecord.kind, let record = try? EpochKeyRecord(decoding: body), record.epoch > epoch {
            epoch = record.epoch
            rotationDue = false
            wraps = Dictionary(record.wraps.map { ($0.account, $0.keyID) }) { a, _ in a }
            linkOpen = false
        } else if kind == LinkEntries.keyKind, LinkEntries.Key(body: body)?.epoch == epoch, epoch > 0 {
            linkOpen = true
        } else if kind == SealedZone.rotationDueKind, SealedZone.rotationDueEpoch(body) == epoch, epoch > 0 {
            rotationDue = true
        }
    }

    /// Whether `epoch` owes a rotation: a member left without one (the marker), or a member's
    /// keys changed since the epoch's record wrapped to it (SEALING.md §4.7).
    func owesRotation(members: Set<String>, directory: AccountKeyDirectory) -> Bool {
        rotationDue || members.contains { m in wraps[m].map { directory.keys[m]?.keyID != $0 } ?? false }
    }

    /// Ids whose presence in the zone means these epochs are no longer current: the next
    /// epoch's key record, and the current one's rotation-due marker. Content sealed under
    /// `epoch` is appended only while the zone holds neither.
    func endingIDs(zone: String) -> [CompactID] {
        [SealedZone.keyRecordID(zone: zone, epoch: epoch + 1), SealedZone.rotationDueID(zone: zone, epoch: epoch)]
    }

    /// The zone's epochs as its log holds them: one read of the whole zone. `serviceBusy` when
    /// the storage does not answer or the zone changed under the read (a compaction, a new
    /// incarnation): the caller starts over.
    static func read(_ zone: String, incarnation: SequenceNumber, from store: any ServiceStorage) throws(SyncError) -> ZoneEpochs {
        var epochs = ZoneEpochs(incarnation: incarnation)
        var token: FeedToken? = nil
        var sameIncarnation = true
        do throws(FeedError) {
            while sameIncarnation {
                let page = try store.zoneChanges(zone, since: token, limit: 10_000)
                sameIncarnation = page.incarnation == incarnation
                for e in page.entries { epochs.observe(e.entry) }
                token = page.token
                if !page.moreComing { break }
            }
        } catch {
            switch error {
            case .invalidToken, .invalidLimit:
                throw .invalidRequest("the service cannot read the keys of \(zone) (\(error)): its operator must repair it")
            default: throw .serviceBusy(retryAfter: .seconds(1))
            }
        }
        guard sameIncarnation else { throw .serviceBusy(retryAfter: .seconds(1)) }
        return epochs
    }
}
