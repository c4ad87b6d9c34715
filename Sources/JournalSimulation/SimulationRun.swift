import Foundation
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import ListModel
import JournalTesting

/// One seeded simulation (`SyncSimulation.simulate`): the service and the devices, what the run
/// did so far, and one function per kind of step. Every random choice comes from `rng`, in the
/// order the steps make them, so a seed replays exactly.
final class SimulationRun {
    typealias Node = SyncSimulation.Node
    let options: SimulationOptions
    var result: SimulationResult
    var rng: SplitMix64
    let clock = VirtualClock(startingAt: 1_795_424_400_000)
    let serverFS = MemoryFileSystem()
    var limits = ServiceLimits()
    /// The engine's store, or nil over another storage (`SimulationOptions.storage`).
    var serverStore: JournalStore?
    /// The other storage, kept across service restarts.
    var storage: (any ServiceStorage)?
    /// The service's storage with faults (`SimulationOptions.storageFaults`), when it has them.
    var faulty: FaultyStorage?
    /// Faults injected by the storages with faults replaced at service restarts.
    var earlierStorageFaults = 0
    let box: CoreBox
    let credentials = SimulatedCredentials()
    let accounts: [String]
    var nodes: [Node] = []
    var acked: [SyncSimulation.Acked] = []
    /// Per (account, zone): how often the account lost access (a removal voids its pending changes).
    var generation: [String: Int] = [:]
    /// Items ever added, per zone: what later operations name.
    var items: [String: [CompactID]] = [:]
    var itemCounter = 0

    init(_ o: SimulationOptions, result: SimulationResult) throws {
        options = o
        self.result = result
        rng = SplitMix64(seed: o.seed)
        try serverFS.createDirectory("/srv")
        limits.retentionMillis = o.retentionDays * 86_400_000
        limits.maxUploadEntries = 40
        // Odd seeds compact a list or two per group, so fetches of lists whose group is done are
        // answered while later groups are purged (SYNC.md §6.2 rule 3).
        limits.compactionGroupEntries = o.seed % 2 == 1 ? 50 : 1_000_000
        // Histories come in pages of a few events, so that most take several and a compaction
        // can land between two of them (SYNC.md §3.12).
        limits.maxHistoryPageEvents = 5 + Int(o.seed % 7)
        let clock = clock
        if let make = o.storage {
            let inner = try make { clock.now() }
            let storage: any ServiceStorage = o.storageFaults == nil ? inner : FaultyStorage(inner, seed: o.seed ^ 0x5707_A6E)
            self.storage = storage
            faulty = storage as? FaultyStorage
            box = CoreBox(try ServiceCore(storage: storage, limits: limits, now: { clock.now() }))
        } else {
            let store = try JournalStore.open("/srv/service.wal", options: SyncSimulation.storeOptions(serverFS))
            serverStore = store
            if o.storageFaults != nil { faulty = FaultyStorage(store, seed: o.seed ^ 0x5707_A6E) }
            box = CoreBox(try Self.core(over: store, faulty: faulty, limits: limits, clock: clock))
        }
        accounts = (0..<max(1, min(o.accounts, o.replicas))).map { "a\($0)" }
        for i in 0..<max(1, o.replicas) {
            let account = accounts[i % accounts.count]
            nodes.append(try Node(replica: "\(account):d\(i)", account: account, box: box, credentials: credentials, clock: clock, seed: rng.next()))
        }
    }

    /// The service over the engine's store, through `faulty` when the run injects storage faults.
    static func core(over store: JournalStore, faulty: FaultyStorage?, limits: ServiceLimits, clock: VirtualClock) throws -> ServiceCore {
        guard let faulty else { return try ServiceCore(store: store, limits: limits, now: { clock.now() }) }
        return try ServiceCore(storage: faulty, engine: store, devices: DeviceFetches(loadingFrom: store.path + "/" + DeviceFetches.file, fs: store.fileSystem),
                               limits: limits, now: { clock.now() })
    }

    /// The service's zones as its storage holds them, read past any injected fault: the run's
    /// own bookkeeping, not a call of the service.
    func serviceZones() throws -> [ZoneInfo] {
        try (faulty?.inner ?? box.core.storage).allZones()
    }

    func key(_ account: String, _ zone: String) -> String { account + "|" + zone }
    func pick<T>(_ xs: [T]) -> T? { xs.isEmpty ? nil : xs[Int(rng.next() % UInt64(xs.count))] }

    /// Every account starts with a list, shared with every other account; then the faults begin.
    func start() async throws {
        if let sealing = options.sealing {
            for a in accounts { _ = try box.core.perform(caller: a, .publishAccountKeys(sealing.published(a))) }
            for n in nodes {
                n.sealing = sealing.engineSealing(n.account)
                await n.engine.useSealing(n.sealing!)
            }
        }
        for account in accounts {
            let owner = nodes.first { $0.account == account }!
            let zone = try await owner.engine.createList(listName("list-\(account)"))
            await beginEpoch(zone, on: owner, reason: .creation)
            _ = await owner.engine.sync()
            for other in accounts where other != account {
                let invitation = try await owner.engine.share(zone, with: other)
                let member = nodes.first { $0.account == other }!
                _ = try await member.engine.accept(invitation)
            }
            await beginEpoch(zone, on: owner, reason: .joined)
        }
        if options.faults {
            for n in nodes { n.service.faults = options.serviceFaults }
            faulty?.faults = options.storageFaults ?? StorageFaults()
            credentials.storage = faulty
        }
    }

    /// One step: a device edits, syncs, goes offline or loses power; time passes; the service
    /// compacts or restarts; an owner changes who shares a list; a device starts shopping.
    func step() async throws {
        // A membership change takes effect at whichever call the service applies it: the call
        // that made it, or, committed with its answer lost, the next call that reads the
        // service's records back, or its restart. An account that left loses its pending changes.
        let before = SyncSimulation.memberships(box.core, zones: (try? serviceZones()) ?? [])
        defer { countDepartures(since: before) }
        let o = options
        let roll = rng.next() % 1_000
        let node = nodes[Int(rng.next() % UInt64(nodes.count))]
        switch roll {
        case 0..<550: try await edit(on: node)
        case 550..<800: tally(await node.engine.sync(), of: node)
        case 800..<840: if o.faults && o.partitions { node.service.offline.toggle() }
        case 840..<870:
            if o.faults && o.powerLosses {
                let modes: [MemoryFileSystem.CrashMode] = [.dropUnsynced, .tearLastWrite(seed: rng.next()), .garbleLastWrite(seed: rng.next())]
                try await node.restart(clock: clock, seed: rng.next(), crash: modes[Int(rng.next() % 3)])
                result.powerLosses += 1
            }
        case 870..<890: clock.advance(by: Int64(rng.next() % (3 * 86_400_000)))
        case 890..<905: try compactBesideAReader()
        case 905..<915: if o.faults && o.serviceRestarts { try restartService() }
        case 915..<940: try await changeSharing(around: node)
        case 940..<960:
            guard let zone = pick(await node.engine.lists) else { return }
            try? await node.engine.setShopping(rng.next() % 2 == 0, in: zone)
        case 960..<975:
            // Someone asks who bought the milk while the list changes: a list installed from
            // the service's snapshot fetches its history now (others have it already).
            guard let zone = pick(await node.engine.lists) else { return }
            try? await node.engine.fetchHistory(zone)
        case 975..<990:
            // A hint for one list (SYNC.md §7.7): push, then that list alone, no database
            // request; now and then one for a list the device does not have (a full sync).
            guard let zone = rng.next() % 8 == 0 ? ZoneID(owner: pick(accounts) ?? "a0", name: "gone-\(rng.next() % 4)") : pick(await node.engine.lists) else { return }
            tally(await node.engine.sync(hinted: [ZoneHint(zone: zone, head: nil)]), of: node, full: false)
            result.hintedSyncs += 1
        default: tally(await node.engine.sync(), of: node)
        }
    }

    func tally(_ r: SyncReport, of node: Node, full: Bool = true) {
        SyncSimulation.tally(r, of: node, now: clock.now(), retention: options.retentionDays * 86_400_000, full: full, &result)
    }

    /// A local edit of one of the device's lists, counted as acknowledged unless the service had
    /// already taken the list from the account.
    func edit(on node: Node) async throws {
        guard let zone = pick(await node.engine.lists) else { return }
        let known = items[zone.storeName] ?? []
        let op: JournalCodec.EntryOperation
        switch rng.next() % 11 {
        case 0..<4:
            itemCounter += 1
            // A sealed list takes random (version-4) item ids only (SEALING.md §5).
            let item = options.sealing == nil ? CompactID("i\(itemCounter)")! : CompactID.random(using: &rng)
            op = .add(item: item, text: "thing \(itemCounter)", after: rng.next() % 3 == 0 ? nil : pick(known))
            items[zone.storeName, default: []].append(item)
        case 4..<6: guard let i = pick(known) else { return }; op = .markOff(item: i)
        case 6: guard let i = pick(known) else { return }; op = .unmark(item: i)
        case 7: guard let i = pick(known) else { return }; op = .delete(item: i)
        case 8: op = .rename(name: "List \(rng.next() % 100)")
        case 9:
            // A move (Spec/MERGE.md §3.5): to the top or after another item, any of them.
            guard let i = pick(known) else { return }
            op = .move(item: i, after: rng.next() % 4 == 0 ? nil : pick(known))
        default: op = .recolour(colour: ["red", "green", "blue"][Int(rng.next() % 3)])
        }
        do throws(SyncEngineError) {
            guard let e = try await record(op, in: zone, on: node) else { return }
            // A change made to a list the service already took from this account (the device has
            // not heard yet) goes with the list: it is not counted.
            let access = zone.owner == node.account ? (try? box.core.storage.zoneInfo(zone.storeName))??.isDeleted != true
                : box.core.members(of: zone).contains(node.account)
            acked.append(SyncSimulation.Acked(id: e.id, zone: zone.storeName, account: node.account,
                                              generation: generation[key(node.account, zone.storeName), default: 0] + (access ? 0 : 1_000_000)))
        } catch {
            if case .noSuchList = error { return }
            throw error
        }
    }

    /// A new list's name: in a sealed run a sealed zone's (`~` and 32 hex digits, SEALING.md §5.1).
    func listName(_ plain: String) -> String {
        guard options.sealing != nil else { return plain }
        return SealedZone.name(random: (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
    }

    /// In a sealed run, the owner's device (or a member's) begins the list's next epoch for its
    /// members as the service has them (the app asks for them), under the records it took.
    func beginEpoch(_ zone: ZoneID, on node: Node, reason: EpochKeyRecord.Reason) async {
        guard let sealing = options.sealing, let records = try? await node.engine.keyRecords(of: zone) else { return }
        let members = [zone.owner] + box.core.members(of: zone)
        guard let record = sealing.nextRecord(records, zone, node.account, members, reason) else { return }
        _ = try? await node.engine.recordKeys(record, in: zone)
        result.rotations += 1
    }

    /// Records `op`, its text sealed for its entry in a sealed run (SEALING.md §5) under the
    /// newest epoch the service took; nil when the account holds no key of it (not wrapped to
    /// yet, or no longer): no text is written then.
    func record(_ op: JournalCodec.EntryOperation, in zone: ZoneID, on node: Node) async throws(SyncEngineError) -> JournalEntry? {
        guard let sealing = options.sealing else { return try await node.engine.recordUnchecked(op, in: zone) }
        let text: String, kind: UInt8
        switch op {
        case .add(_, let t, _): (text, kind) = (t, SealedChange.addKind)
        case .rename(let t): (text, kind) = (t, SealedChange.renameKind)
        case .recolour(let t): (text, kind) = (t, SealedChange.recolourKind)
        default: return try await node.engine.recordUnchecked(op, in: zone)
        }
        let records = try await node.engine.keyRecords(of: zone), account = node.account
        let probe = SealBinding(zone: zone.storeName, entry: CompactID("probe")!, kind: kind, item: nil, author: node.replica,
                                clock: HybridTime(rawValue: 0), wallTime: 0, epoch: records.last?.epoch ?? 1)
        guard sealing.seal("", probe, records, account) != nil else { return nil }
        return try await node.engine.recordUnchecked(in: zone) { s in
            let binding = SealBinding(zone: s.zone, entry: s.id, kind: kind, item: op.item, author: s.author,
                                      clock: s.clock, wallTime: s.wallTime, epoch: records.last!.epoch)
            guard let value = sealing.seal(text, binding, records, account) else { fatalError("a key that sealed once did not seal again") }
            switch op {
            case .add(let item, _, let after): return SealedChange.add(item: item, after: after, text: value).operation
            case .rename: return SealedChange.rename(value).operation
            default: return SealedChange.recolour(value).operation
            }
        }
    }

    /// In a sealed run, once quiet: each list whose newest epoch does not wrap to exactly its
    /// members (someone joined, or left with no text since to ask for a rotation) gets a new
    /// epoch from its owner's device, so every member can open every text. Whether any did.
    func rekeySealedLists() async throws -> Bool {
        guard options.sealing != nil else { return false }
        var any = false
        for info in try serviceZones() where !info.isDeleted && SealedZone.isSealed(storeName: info.name) {
            guard let zone = ZoneID(storeName: info.name) else { continue }
            var owner: Node? = nil
            for n in nodes where n.account == zone.owner {
                if await n.engine.lists.contains(zone) { owner = n; break }
            }
            guard let owner, let records = try? await owner.engine.keyRecords(of: zone) else { continue }
            let members = Set([zone.owner] + box.core.members(of: zone))
            guard Set(records.last?.wraps.map(\.account) ?? []) != members else { continue }
            await beginEpoch(zone, on: owner, reason: .joined)
            any = true
        }
        return any
    }

    /// A sealed run's last check: every sealed text every device's lists show opens.
    func checkSealedTexts() async {
        guard let sealing = options.sealing else { return }
        for n in nodes {
            for z in await n.engine.lists {
                guard let state = try? await n.engine.state(of: z) else { continue }
                let texts = state.items.compactMap(\.sealedText) + [state.sealedName, state.sealedColour].compactMap { $0 }
                for t in texts {
                    result.sealedTexts += 1
                    if sealing.open(t.value, t.binding, state.keyRecords, n.account) == nil { result.unopened += 1 }
                }
                if let plain = state.items.first(where: { $0.sealedText == nil }) {
                    result.problems.append("\(n.account)'s \(z.storeName) shows item \(plain.id) with a plain text in a sealed run")
                }
            }
        }
        if result.unopened > 0 { result.problems.append("\(result.unopened) of \(result.sealedTexts) sealed texts did not open") }
    }

    /// The service compacts while someone pages a list as the run rewrites the log (`WindowReader`).
    func compactBesideAReader() throws {
        let listed = try serviceZones().filter { !$0.isDeleted && !$0.name.hasPrefix("_") }
        let reader = pick(listed).flatMap { ZoneID(storeName: $0.name) }.map { WindowReader(core: box.core, zone: $0) }
        serverFS.openHook = { path in if path.hasSuffix(".cleaned") { reader?.fetchOnce() } }
        let report: ListCompactionReport
        do { report = try box.core.compact(now: clock.now()) } catch {
            serverFS.openHook = nil
            // A storage that did not answer fails the run, as it would a node's: the next runs
            // try again. Without injected faults, a failure is the run's to report.
            guard faulty != nil, case .serviceBusy = error else { throw error }
            result.compactionsFailed += 1
            return
        }
        serverFS.openHook = nil
        switch reader?.finish() {
        case .same: result.windowReads += 1
        case .differs(let problem):
            result.windowReads += 1
            result.problems.append(problem)
        case .refused, nil: break
        }
        result.compactions += 1
        result.purged += report.storage.entriesPurged + report.storage.entriesReplaced
    }

    /// Voids the pending changes of every account that lost access to a zone since `before`
    /// (its memberships then): they go with the list.
    func countDepartures(since before: [String: Set<String>]) {
        let after = SyncSimulation.memberships(box.core, zones: (try? serviceZones()) ?? [])
        for (zone, members) in before {
            for a in members.subtracting(after[zone] ?? []) { generation[key(a, zone), default: 0] += 1 }
        }
    }

    /// The service restarts; half the time its machine lost power. A membership change it
    /// committed but never applied (its answer lost after the commit) takes effect now, if no
    /// call read it back before (`step` counts the departures).
    func restartService() throws {
        let clock = clock
        let lostPower = rng.next() % 2 == 0
        if let storage {
            // A database keeps what it committed; the node's memory is what goes.
            box.core = try starting { try ServiceCore(storage: storage, limits: limits, now: { clock.now() }) }
            result.serviceRestarts += 1
            return
        }
        try? serverStore?.close()
        if lostPower { serverFS.crash(.dropUnsynced) }
        let store = try JournalStore.open("/srv/service.wal", options: SyncSimulation.storeOptions(serverFS))
        serverStore = store
        earlierStorageFaults += self.faulty?.injected.values.reduce(0, +) ?? 0
        let faulty = self.faulty.map { FaultyStorage(store, seed: rng.next(), faults: $0.faults) }
        self.faulty = faulty
        if credentials.storage != nil { credentials.storage = faulty }
        box.core = try starting { try Self.core(over: store, faulty: faulty, limits: limits, clock: clock) }
        result.serviceRestarts += 1
    }

    /// A service start, tried again while the storage's injected faults fail it (a node that
    /// cannot read its records at start does not start; its supervisor starts it again).
    func starting(_ make: () throws -> ServiceCore) throws -> ServiceCore {
        for _ in 0..<100 {
            do { return try make() } catch {
                guard faulty != nil else { throw error }
                result.startsFailed += 1
            }
        }
        return try make()
    }

    /// Sharing changes: an owner removes a participant, a participant leaves, an owner shares
    /// again (the participant accepts), or a list is deleted or made. Whoever lost access, even
    /// by a call whose response was lost, loses the changes it had not uploaded yet: they go
    /// with the list.
    func changeSharing(around node: Node) async throws {
        guard let owner = nodes.first(where: { $0.account == node.account }) else { return }
        let mine = await owner.engine.lists.filter { $0.owner == owner.account }
        // A sealed run also replaces accounts' keys (SEALING.md §4.7); a plain run's schedule is
        // as it always was.
        switch rng.next() % (options.sealing?.changeKeys == nil ? 5 : 6) {
        case 0, 1:
            guard let zone = pick(mine), let other = pick(accounts.filter { $0 != owner.account }) else { return }
            if box.core.members(of: zone).contains(other) {
                if (try? await owner.engine.remove(other, from: zone)) != nil { result.membershipChanges += 1 }
            } else if let invitation = try? await owner.engine.share(zone, with: other),
                      let member = pick(nodes.filter({ $0.account == other })), (try? await member.engine.accept(invitation)) != nil {
                // No epoch begun here: the next member's device that fetches the list wraps the
                // key to the new member by itself (SEALING.md §5.2, "a member without a key").
                result.membershipChanges += 1
            }
        case 2:
            // A participant leaves a list shared with it.
            guard let zone = pick(await node.engine.lists.filter { $0.owner != node.account }) else { return }
            if (try? await node.engine.remove(node.account, from: zone)) != nil { result.membershipChanges += 1 }
        case 3:
            guard rng.next() % 4 == 0, let zone = pick(mine) else { return }
            try await owner.engine.deleteList(zone)
            for a in accounts { generation[key(a, zone.storeName), default: 0] += 1 }
            result.membershipChanges += 1
        case 4:
            if let zone = try? await owner.engine.createList(listName("list-\(owner.account)-\(rng.next() % 1_000)")) {
                await beginEpoch(zone, on: owner, reason: .creation)
            }
        default:
            // The account retires its keys, vouched for by the old: every device follows, and
            // each of its sealed lists owes a rotation away from them.
            guard let sealing = options.sealing, let change = sealing.changeKeys else { return }
            // Published, or else not: an answer lost after the commit is asked again (the same
            // keys again are done), then what the directory holds decides.
            let keys = change(owner.account)
            var taken = false
            for _ in 0..<20 where !taken {
                taken = (try? box.core.perform(caller: owner.account, .publishAccountKeys(keys))) != nil
            }
            if !taken {
                for _ in 0..<20 {
                    guard let held = try? box.core.perform(caller: owner.account, .fetchAccountKeys(owner.account)).publishedAccountKeys() else { continue }
                    taken = held.sameKeys(as: keys)
                    break
                }
            }
            if taken { result.keyChanges += 1 } else { sealing.keepKeys?(owner.account) }
        }
    }

    /// Quiet: everyone online, no faults, shopping over; sync until nothing moves, compact, sync
    /// again; then count and check.
    func finish() async throws {
        for n in nodes {
            n.service.offline = false
            n.service.faults = ServiceFaults()
            for z in await n.engine.lists { try? await n.engine.setShopping(false, in: z) }
        }
        faulty?.faults = StorageFaults()
        result.storageFaultsInjected = earlierStorageFaults + (faulty?.injected.values.reduce(0, +) ?? 0)
        if faulty != nil {
            // A compaction run the storage failed may leave its zones refused to fetches until a
            // run succeeds (SYNC.md §6.2 rule 3): the node's next run, which comes soon after a
            // failed one (`ServiceNode`), once the storage answers again.
            let retried = try box.core.compact(now: clock.now())
            result.compactions += 1
            result.purged += retried.storage.entriesPurged + retried.storage.entriesReplaced
        }
        // What the service committed but has not applied yet (answers lost) it applies now,
        // before the devices settle, and departures among it are counted.
        let before = SyncSimulation.memberships(box.core, zones: try serviceZones())
        try box.core.catchUp()
        countDepartures(since: before)
        try await SyncSimulation.settle(nodes, now: clock.now(), retention: options.retentionDays * 86_400_000, &result)
        if try await rekeySealedLists() {
            try await SyncSimulation.settle(nodes, now: clock.now(), retention: options.retentionDays * 86_400_000, &result)
        }
        let final = try box.core.compact(now: clock.now())
        result.compactions += 1
        result.purged += final.storage.entriesPurged + final.storage.entriesReplaced
        try await SyncSimulation.settle(nodes, now: clock.now(), retention: options.retentionDays * 86_400_000, &result)
        // The histories devices fetch only when asked, asked for before they are compared.
        for n in nodes {
            for z in await n.engine.lists { try? await n.engine.fetchHistory(z) }
        }
        var distinctUploads = 0
        for n in nodes {
            let t = await n.engine.totals
            result.localChanges += n.earlier.localChanges + t.localChanges
            result.entriesSent += n.earlier.entriesSent + t.entriesSent
            result.faultsInjected += n.service.injected
            let (distinct, foreign) = n.ledger.counts
            distinctUploads += distinct
            result.foreignUploads += foreign
        }
        if result.localChanges > 0 {
            result.uploadsPerChange = Double(distinctUploads) / Double(result.localChanges)
            result.sendsPerChange = Double(result.entriesSent) / Double(result.localChanges)
        }
        if result.foreignUploads > 0 { result.problems.append("devices uploaded \(result.foreignUploads) entries they did not author") }
        await checkSealedTexts()
        try SyncSimulation.check(nodes, core: box.core, store: serverStore, acked: acked, generation: generation, &result)
    }
}
