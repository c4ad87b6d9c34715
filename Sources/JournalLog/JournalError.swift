#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the storage layer can throw. Each case says what happened and where.
public enum JournalError: Error, Sendable, CustomStringConvertible {
    /// A system call failed: the operation, the file and its errno.
    case io(operation: String, path: String, errno: Int32)
    /// Damage in the log that the recovery mode does not tolerate (FORMAT.md §9).
    case corruption(Corruption)
    /// Another writer holds the store's lock (the store directory's `flock`); `holder` names it
    /// when it could be read from `LOCK`.
    case locked(path: String, holder: String?)
    /// Something is at `path` but it is not a store directory; `reason` says why.
    case notAStore(path: String, reason: String)
    /// Nothing is at `path`, and the store was not to be created there.
    case storeMissing(path: String)
    /// An entry that cannot be stored, or an error a visitor threw; the text says what.
    case invalidEntry(String)
    /// A store option or an argument outside its range (what it is, and the range).
    case invalidOption(String)
    /// A compaction was asked for while one runs on the same store.
    case compactionRunning
    /// An atomic batch encodes to more bytes than one record may hold (FORMAT.md §8).
    case batchTooLarge(bytes: Int, limit: Int)
    /// An earlier I/O error stopped the writer; reopen the store to recover.
    case writerFailed(String)
    /// The store was closed; open it again to use it.
    case closed
    /// What was asked needs the writer (or writing) and this open only reads; the text says why.
    case readOnly(String)
    /// The zone's latest incarnation was deleted; `createZone` starts a new one.
    case zoneDeleted(zone: String, at: SequenceNumber)
    /// No zone has this name.
    case zoneNotFound(String)
    /// The zone already holds an entry with this id and other content (TOKENS.md §2): a retry
    /// carries the same bytes, so this is a second, different entry reusing an id. `storedAt` is
    /// the stored entry's sequence (nil: the other one is earlier in the same batch).
    case idConflict(zone: String, id: CompactID, storedAt: SequenceNumber?)
    /// The log lacks entries the store acknowledged (`EPOCHS`, Spec/TOKENS.md §7): the writer
    /// refuses to open, so nothing reuses their sequences, until an operator accepts the loss.
    case acknowledgedEntriesMissing(String)
    /// The store's token key file is damaged: tokens cannot be checked.
    case storeKeyDamaged(path: String)
    /// A sealed zone's epoch moved since the caller read it: the zone holds the next key record
    /// or the current epoch's rotation-due marker (another node's). Read the epochs again.
    case keysMoved(zone: String)
    /// A compaction was planned from a zone read through `readThrough`, and an entry at
    /// `appended` joined the zone (or a new incarnation of it started there) before the rewrite
    /// could commit: nothing was compacted.
    case compactionConflict(zone: String, appended: SequenceNumber, readThrough: SequenceNumber)

    public var description: String {
        switch self {
        case .io(let op, let path, let e):
            return "\(op) failed on \(path): \(String(cString: strerror(e))) (errno \(e))"
        case .corruption(let c): return c.description
        case .locked(let path, let holder):
            return "the store \(path) is open for writing by \(holder ?? "another process"); wait for it to finish (or give a lock timeout), "
                + "or read it meanwhile: readers such as `jlog show`, `zones`, `changes`, `history` and `verify` take no lock"
        case .notAStore(let path, let reason): return "\(path) is not a JournalLog store: \(reason)"
        case .storeMissing(let path): return "no store at \(path)"
        case .invalidEntry(let why): return "invalid entry: \(why)"
        case .invalidOption(let why): return "invalid option: \(why)"
        case .compactionRunning: return "a compaction is already running on this store; wait for it to finish"
        case .batchTooLarge(let b, let l): return "batch encodes to \(b) bytes; an atomic batch is at most \(l) bytes"
        case .writerFailed(let why): return "the writer stopped after an I/O error (\(why)); reopen the store to recover"
        case .closed: return "the store is closed"
        case .readOnly(let why): return "the store is open read-only: \(why)"
        case .zoneDeleted(let z, let at): return "zone \(z) was deleted at sequence \(at); create it again (`createZone(_:)`: a new incarnation) before appending"
        case .zoneNotFound(let z): return "no zone named \(z) (`zones()` lists the store's zones)"
        case .idConflict(let z, let id, let at):
            return "entry id \(id) in zone \(z) is already " + (at.map { "stored at sequence \($0)" } ?? "used earlier in the same batch")
                + " with other content; a retry must carry the same entry, and a new entry needs a new id (nothing of this append was stored)"
        case .acknowledgedEntriesMissing(let why):
            return "acknowledged entries are missing: \(why). Put the missing segment files back (from a backup, or torn/), "
                + "or accept the loss with `jlog recover STORE --accept-loss` (StoreOptions.acceptLoss): the store then begins a new token epoch, "
                + "and every change token past the end gets invalidToken instead of skipping entries"
        case .storeKeyDamaged(let p): return "the token key \(p) is damaged; restore it from a backup, or delete it to issue a new key (every client then re-fetches from scratch)"
        case .keysMoved(let z): return "the key epoch of zone \(z) moved on since it was read (another node began one, or a member left); read it again"
        case .compactionConflict(let z, let at, let through):
            return "zone \(z) changed at sequence \(at) after the compaction read it through \(through); nothing was compacted: run the compaction again"
        }
    }
}

/// A damaged spot in a store: the segment file, the byte offset in it, the last
/// sequence that was read intact before it, and what is wrong.
public struct Corruption: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong at the damaged spot (FORMAT.md §9.1).
    public enum Problem: Sendable, Equatable {
        /// The frame's CRC, chained from the one before it, does not match its bytes.
        case crcMismatch(stored: UInt32, computed: UInt32)
        /// A frame header whose length field exceeds the hard limit.
        case badLength(UInt32)
        /// The frame's length runs past the end of the file.
        case lengthPastEOF(length: UInt32, available: Int64)
        /// Fewer than 13 bytes remain and they are not all zero.
        case cutOffHeader(available: Int64)
        /// A record type this version does not know and may not skip.
        case unknownType(UInt8)
        /// A sequence that does not follow the last one consumed (FORMAT.md §4.2).
        case sequenceOutOfOrder(previous: SequenceNumber, found: SequenceNumber)
        /// The frame's CRC holds but its payload does not decode.
        case badPayload(CodecError)
        /// The segment header does not decode (`reason` says why, FORMAT.md §3.1).
        case badSegmentHeader(SegmentHeaderError)
        /// Non-zero bytes after the all-zero end marker.
        case dataAfterZeroTail
        /// The segment does not continue the chain of the one before it (a missing or foreign segment).
        case chainBreak(expected: UInt32, found: UInt32)
        /// The oldest segment of the store does not begin the store's chain (`expected` is
        /// `crc32c(storeID)`, FORMAT.md §3.3): a segment before it is missing. No mode keeps a
        /// prefix of a log whose start is gone; salvage reads on.
        case missingEarlierSegment(expected: UInt32, found: UInt32)
        /// The segment's store id is not that of the first segment: it belongs to another store.
        case foreignSegment
        /// The segment's base sequence is out of range or differs from the number in its file name.
        case baseSequenceMismatch(expected: SequenceNumber, found: SequenceNumber)
        /// A segment file's name is not a 20-digit base sequence.
        case badSegmentName

        /// The problem's name in FORMAT.md §9.1 (`jlog verify --json`'s `kind`).
        public var kind: String {
            switch self {
            case .crcMismatch: "crcMismatch"
            case .badLength: "badLength"
            case .lengthPastEOF: "lengthPastEOF"
            case .cutOffHeader: "cutOffHeader"
            case .unknownType: "unknownType"
            case .sequenceOutOfOrder: "sequenceOutOfOrder"
            case .badPayload: "badPayload"
            case .badSegmentHeader: "badSegmentHeader"
            case .dataAfterZeroTail: "dataAfterZeroTail"
            case .chainBreak: "chainBreak"
            case .missingEarlierSegment: "missingEarlierSegment"
            case .foreignSegment: "foreignSegment"
            case .baseSequenceMismatch: "baseSequenceMismatch"
            case .badSegmentName: "badSegmentName"
            }
        }

        /// For `badSegmentHeader`, why (FORMAT.md §3.1): `truncated`, `badMagic`, `crcMismatch`,
        /// `unsupportedMajor`, `badHeaderSize` or `nonZeroReserved`; nil for the others.
        public var reason: String? {
            guard case .badSegmentHeader(let e) = self else { return nil }
            switch e {
            case .truncated: return "truncated"
            case .badMagic: return "badMagic"
            case .unsupportedMajor: return "unsupportedMajor"
            case .badHeaderSize: return "badHeaderSize"
            case .crcMismatch: return "crcMismatch"
            case .nonZeroReserved: return "nonZeroReserved"
            }
        }

        var summary: String {
            switch self {
            case .crcMismatch(let s, let c): "CRC mismatch (stored \(hex32(s)), computed \(hex32(c)))"
            case .badLength(let l): "frame length \(l) exceeds the \(Limits.maxPayloadBytes)-byte limit"
            case .lengthPastEOF(let l, let a): "frame length \(l) runs past the end of the file (\(a) bytes left)"
            case .cutOffHeader(let a): "frame header cut off (\(a) of \(Frame.headerSize) bytes)"
            case .unknownType(let t): "unknown record type 0x\(String(t, radix: 16)) (not skippable)"
            case .sequenceOutOfOrder(let p, let f): "sequence \(f) does not follow \(p)"
            case .badPayload(let e): "payload does not decode: \(e)"
            case .badSegmentHeader(let e): "segment header: \(e)"
            case .dataAfterZeroTail: "non-zero bytes after the zero end marker"
            case .chainBreak(let e, let f): "chain break: expected previous chain \(hex32(e)), header says \(hex32(f)) (a segment is missing or foreign)"
            case .missingEarlierSegment(let e, let f):
                "chain break at the oldest segment: expected previous chain \(hex32(e)) (the store's start), header says \(hex32(f)): "
                    + "a segment before it is missing (put it back from a backup; salvage reads what is left)"
            case .foreignSegment: "segment belongs to another store"
            case .baseSequenceMismatch(let e, let f): "segment base sequence \(f) does not match \(e)"
            case .badSegmentName: "segment file name is not a 20-digit base sequence"
            }
        }
    }

    /// The damaged segment file.
    public var segment: String
    /// The byte offset of the damage in the segment (0 for a header problem).
    public var offset: Int64
    /// The last sequence read intact before the damage (0 when none).
    public var lastGoodSequence: SequenceNumber
    /// What is wrong there.
    public var problem: Problem
    /// True when the damage is a torn tail: at the end of the last segment, with nothing intact
    /// after it (zeros, EOF, or bytes in which no frame validates: FORMAT.md §9.1).
    public var isTornTail: Bool

    /// Describes a damaged spot from its parts.
    public init(segment: String, offset: Int64, lastGoodSequence: SequenceNumber, problem: Problem, isTornTail: Bool) {
        self.segment = segment
        self.offset = offset
        self.lastGoodSequence = lastGoodSequence
        self.problem = problem
        self.isTornTail = isTornTail
    }

    public var description: String {
        "\(isTornTail ? "torn tail" : "corruption") in segment \(segment) at byte \(offset), after sequence \(lastGoodSequence): \(problem.summary)"
    }
}

extension Corruption.Problem: Error {}

extension JournalError {
    /// Keeps a JournalError as it is; wraps anything else a visitor threw.
    static func wrap(_ error: any Error) -> JournalError {
        if let e = error as? JournalError { return e }
        if let c = error as? Corruption { return .corruption(c) }
        return .invalidEntry(String(describing: error))
    }
}
