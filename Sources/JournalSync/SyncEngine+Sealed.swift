import JournalLog
import JournalQuery
import ListModel

extension SyncEngine {
    /// Gives the engine the app's sealing: from then on a sealed list's change the service
    /// refused for its epoch (`staleEpoch`, `rotationDue`) is made again under the list's newest
    /// key by the engine itself, rotating first when a departure owes it; and a member who
    /// joined a sealed list without a key is wrapped to after a fetch (Spec/SEALING.md §5.2).
    public func useSealing(_ sealing: any SealedListSealing) {
        self.sealing = sealing
    }

    /// Of one upload's refusals, those to drop (`rejected`); with the app's sealing, a sealed
    /// change refused for its epoch is kept queued instead, for `reissueEpochRefusals` to make
    /// again after the fetch it asks for: kept, it survives the list's re-fetch and a restart
    /// (the next upload is refused the same way), until it is made again, or has been refused
    /// `maxReissueAttempts` times while the list waited on nothing else.
    func keepingEpochRefusals(_ refused: [CompactID: EntryFailure], in name: String) -> [CompactID: EntryFailure] {
        guard sealing != nil else { return refused }
        var drop: [CompactID: EntryFailure] = [:]
        for (id, failure) in refused {
            switch failure {
            case .rotationDue(let epoch):
                owedRotations[name] = max(owedRotations[name] ?? 0, epoch)
                fallthrough
            case .staleEpoch:
                // Waiting on the list's re-fetch (a record of this device's refused, shopping)
                // is not the change's failing: it is not counted.
                let stalled = state.zones[name].map { $0.refetchWanted || $0.shopping } ?? false
                let waited = (epochRefused[name]?[id] ?? 0) + (stalled ? 0 : 1)
                if waited > Self.maxReissueAttempts { drop[id] = failure; continue }
                epochRefused[name, default: [:]][id] = waited
                state.zones[name]?.needsFetch = true
            default: drop[id] = failure
            }
        }
        return drop
    }

    /// The list's key records the service has taken, in epoch order: fetched from it, or
    /// uploaded from here and acknowledged. A text is sealed under the newest of these only:
    /// a record of this device's that lost the race for its epoch (another member's was taken)
    /// would leave every text sealed under it unreadable to every member (Spec/SEALING.md §5.2).
    public func keyRecords(of zone: ZoneID) throws(SyncEngineError) -> [EpochKeyRecord] {
        let list: ListState
        do { list = try ListQuery(store: store).materialise(zone.storeName).state } catch { throw Self.queryError(error) }
        return try takenKeyRecords(list.keyRecords, in: zone.storeName)
    }

    /// Of `records` (a list's, in epoch order), those up to the first the service has not taken.
    func takenKeyRecords(_ records: [EpochKeyRecord], in name: String) throws(SyncEngineError) -> [EpochKeyRecord] {
        let waiting: Set<CompactID>
        do { waiting = Set(try pendingLocal(name).entries.map(\.entry.id)).subtracting(savedKeyRecords).union(state.zones[name]?.rejected ?? []) } catch {
            throw .storage(error)
        }
        var taken: [EpochKeyRecord] = []
        for r in records {
            guard !waiting.contains(SealedZone.keyRecordID(zone: name, epoch: r.epoch)) else { break }
            taken.append(r)
        }
        return taken
    }

    /// After a fetch of a sealed list: begins the epoch a departure owes (when this device's
    /// account holds the current key; its record is uploaded at once, alone), then makes each
    /// change kept queued for its epoch again, as a new local entry sealed under the newest
    /// epoch the service has taken, and drops the refused one (`rejected`: the re-fetch removes
    /// it). The new entry's id is derived from the refused one's (`reissuedID(of:)`), so a change
    /// is made again once, whatever crashes in between.
    func reissueEpochRefusals(_ name: String, _ report: inout SyncReport) async {
        guard let sealing, let z = state.zones[name], let waiting = epochRefused[name], !waiting.isEmpty else { return }
        let entries: [JournalEntry], list: ListState
        do {
            let query = ListQuery(store: store)
            entries = try query.entries(name).entries.map(\.1)
            list = try query.materialise(name).state
        } catch { return }
        guard var records = try? takenKeyRecords(list.keyRecords, in: name) else { return }
        if let owed = owedRotations[name], owed == records.last?.epoch {
            owedRotations[name] = nil
            // A record of the next epoch already here is this device's, still to be taken: the
            // push sends it (alone); another would be a second record under the epoch's one id.
            let begun = list.keyRecords.contains { $0.epoch == owed + 1 }
            if !begun, let record = await nextEpoch(after: records, of: z.zone, members: [z.zone.owner] + list.participants, sealing, &report) {
                records.append(record)
            }
        }
        let held = Set(entries.map(\.id))
        for e in entries where waiting[e.id] != nil {
            guard let change = try? SealedChange(e.operation) else { continue }
            let id = Self.reissuedID(of: e.id)
            if !held.contains(id) {
                let now = clock.now()
                let stamp = EntryStamp(id: id, zone: name, author: replica, clock: hlc.tick(wallMillis: now), wallTime: now)
                guard let newest = records.last?.epoch, change.text.epoch < newest,
                      let operation = sealing.reseal(e, for: stamp, records: records) else {
                    continue
                }
                do { _ = try write([stamp.entry(operation)], in: z.zone) } catch { return }
                report.reissued += 1
            }
            epochRefused[name]?[e.id] = nil
            state.zones[name]?.rejected.append(e.id)
            state.zones[name]?.refetchWanted = true
        }
        if epochRefused[name]?.isEmpty == true { epochRefused[name] = nil }
        try? save()
    }

    /// Begins `zone`'s next epoch now, wrapping to every member under the keys the app's sealing
    /// pinned (reason `accountKeysChanged`), and uploads its record alone: what a member's device
    /// does to re-share a sealed list with an account whose new keys a person has just verified
    /// (`KeyPins.repin`, Spec/SEALING.md §4.7), so that the account opens the whole list again
    /// through the back links. Fetch the list first. Returns the record the service took; nil
    /// when none could be made (a member with no keys pinned, this device without the current
    /// key) or the service took another member's record for the epoch (fetch, then ask again).
    public func rotateKeys(of zone: ZoneID) async throws(SyncEngineError) -> EpochKeyRecord? {
        guard let sealing else { throw .invalid("rotating a list's keys needs the app's sealing (useSealing)") }
        guard state.zones[zone.storeName] != nil else { throw .noSuchList(zone.storeName) }
        let list: ListState
        do { list = try ListQuery(store: store).materialise(zone.storeName).state } catch { throw Self.queryError(error) }
        let records = try takenKeyRecords(list.keyRecords, in: zone.storeName)
        var report = SyncReport()
        return await nextEpoch(after: records, of: zone, members: [zone.owner] + list.participants, reason: .accountKeysChanged, sealing, &report)
    }

    /// How many uploads a change refused for its epoch may meet before it is dropped (a device
    /// that never receives a newer key: one that joined and was never wrapped to).
    static let maxReissueAttempts = 20

    /// After a fetch of a sealed list: when a member (its owner, or a participant the list
    /// shows) has no wrap in the current epoch's record (a join no epoch followed yet: the
    /// inviting device was offline, or its record was lost), and this device's account holds
    /// the current key, begins the next epoch wrapping to every member (reason `joined`,
    /// Spec/SEALING.md §5.2). Any member's device may; the epoch's fixed id lets one record win.
    /// Checked only after a fetch that brought a join or a key record (a sync of an unchanged
    /// list costs nothing), until a check finishes: nothing is recorded when the record this
    /// device can make would still leave them all out (keys reset and not re-verified, §4.7).
    func wrapMembersWithoutKey(_ name: String, _ report: inout SyncReport) async {
        guard let sealing, wrapCheckDue.contains(name), let account = state.account, let z = state.zones[name],
              !z.shopping, !z.pendingDelete, z.replacing == nil, !z.refetchWanted, owedRotations[name] == nil else { return }
        let list: ListState
        do { list = try ListQuery(store: store).materialise(name).state } catch { return }
        guard let records = try? takenKeyRecords(list.keyRecords, in: name) else { return }
        wrapCheckDue.remove(name)
        // A record of this device's waiting to be taken: the push sends it, and the fetch that
        // brings it back checks again.
        guard let current = records.last, !list.keyRecords.contains(where: { $0.epoch > current.epoch }) else { return }
        let wrapped = Set(current.wraps.map(\.account))
        let members = [z.zone.owner] + list.participants
        let missing = members.filter { !wrapped.contains($0) }
        guard wrapped.contains(account), !missing.isEmpty else { return }
        var refused = false
        let record = await nextEpoch(after: records, of: z.zone, members: members, reason: .joined, sealing, &report) { record in
            // None this device can make (a member's keys not pinned), or one that still leaves
            // them all out: settled until a fetch brings another join or record.
            refused = record.map { r in !r.wraps.contains { missing.contains($0.account) } } ?? true
            return !refused
        }
        // Not made for a failure (the directory unreachable, the upload lost): checked again
        // at the next fetch.
        if record == nil && !refused { wrapCheckDue.insert(name) }
    }

    /// The next epoch's record, made and recorded on this device; nil when it cannot be (a
    /// member's keys not published, this device without the current key) or `accept` refuses
    /// what the sealing made (nil: nothing).
    private func nextEpoch(after records: [EpochKeyRecord], of zone: ZoneID, members: [String], reason: EpochKeyRecord.Reason = .leave,
                           _ sealing: any SealedListSealing, _ report: inout SyncReport,
                           accept: (EpochKeyRecord?) -> Bool = { $0 != nil }) async -> EpochKeyRecord? {
        var keys: [PublishedAccountKeys] = []
        for account in Set(members).sorted() {
            do {
                guard let k = try await service.fetchAccountKeys(account) else { return nil }
                keys.append(k)
            } catch { return nil }
        }
        let made = sealing.nextEpoch(after: records, in: zone, members: keys, reason: reason)
        guard accept(made), let record = made else { return nil }
        let entry: JournalEntry
        do { entry = try recordKeys(record, in: zone) } catch { return nil }
        report.rotations += 1
        // Uploaded at once, alone: nothing is sealed under it before the service takes it.
        let answer: UploadResult
        do { answer = try await service.upload([entry], to: zone) } catch {
            guard case .partialFailure(let r) = error else { return nil }
            answer = r
        }
        guard answer.saved.contains(entry.id) else { return nil }
        savedKeyRecords.insert(entry.id)
        return record
    }

    /// The id a refused change made again takes: a version-4 UUID's form over SipHash-2-4 of the
    /// refused id, so that nothing of the text shows in it and it is the same after any restart.
    package static func reissuedID(of id: CompactID) -> CompactID {
        var w = ByteWriter()
        w.append(contentsOf: Array("jlog-reissue".utf8))
        id.encode(into: &w)
        let hi = SipHash24.hash(key: (0x4A4C_5249_0000_0001, 0x7265_6973_7375_6531), w.bytes)
        let lo = SipHash24.hash(key: (0x4A4C_5249_0000_0002, 0x7265_6973_7375_6532), w.bytes)
        return CompactID(uuidHigh: (hi & ~0xF000) | 0x4000, low: (lo & ~(0xC000 << 48)) | (0x8000 << 48))
    }
}
