import JournalCodec

/// One event of a history piece as it is stored (Spec/SNAPSHOT.md §5.2): what a reader that
/// streams a piece passes on (a service's history pages, SYNC.md §3.12) without building an
/// `ActivityLog` of the whole piece.
package struct HistoryPieceEvent: Sendable, Equatable {
    package var kind: ActivityKind
    package var entry: CompactID
    package var author: String
    package var clock: UInt64
    package var wallTime: Int64
    package var item: CompactID? = nil
    /// An add's text (plain or sealed), where the piece carries it on this add.
    package var addText: ListText? = nil
    /// A rename's or recolour's text (plain or sealed), or a join's or leave's participant.
    package var text: ListText? = nil
}

/// Where a streamed read of a piece's events stopped: what resumes there without decoding the
/// events before it (the authors the piece defined so far, and the clock the next delta adds to).
/// Made only by `HistoryPieceCodec.startOfEvents` and `events`, never from outside input.
package struct HistoryPieceResume: Sendable, Equatable {
    /// The byte offset of the next event.
    package var offset: Int
    /// Events read before it.
    package var index: Int
    fileprivate var authors: [String] = []
    fileprivate var previousClock: UInt64 = 0
    /// The piece's zone: what a sealed text's binding names.
    fileprivate var zone = ""
}

extension HistoryPieceCodec {
    /// Where the events of a piece with this header begin (after its header CRC).
    package static func firstEvent(of header: HistoryPieceHeader) -> HistoryPieceResume {
        HistoryPieceResume(offset: fixedHeader + header.zone.utf8.count + 4, index: 0, zone: header.zone)
    }

    /// Checks a whole major-2 piece (size, header, file CRC) and returns its header and where its
    /// events begin; nil for an older writer's major-1 file (read it with `decode`).
    package static func startOfEvents(_ bytes: [UInt8]) throws(ActivityLogError) -> (header: HistoryPieceHeader, start: HistoryPieceResume)? {
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count) }
        let result: Result<(HistoryPieceHeader, HistoryPieceResume)?, ActivityLogError> = bytes.withUnsafeBytes { p in
            do throws(ActivityLogError) {
                guard let header = try decodeHeader(p) else { return .success(nil) }
                let eventsStart = fixedHeader + header.zone.utf8.count + 4
                guard p.count >= eventsStart + 1 + 4 else { throw .malformed("truncated", offset: p.count) }
                guard CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: p[0..<(p.count - 4)])) == p.u32At(p.count - 4) else {
                    throw .checksumMismatch
                }
                return .success((header, firstEvent(of: header)))
            } catch { return .failure(error) }
        }
        return try result.get().map { (header: $0.0, start: $0.1) }
    }

    /// Bytes one event takes at most (an id, an author, a text of 4,096 bytes and a few varints
    /// take under 4.4 KiB): a window this much past an event holds it whole.
    package static let maxEventBytes = 8 << 10

    /// Reads the events of a piece `startOfEvents` checked from `resume` on, giving each to
    /// `body` until it answers false (the event it was given counts as read) or the events end.
    /// Returns where to resume, or nil when every event was read (the `00` byte and the file CRC
    /// follow, nothing else).
    package static func events(_ bytes: [UInt8], from resume: HistoryPieceResume,
                               _ body: (HistoryPieceEvent) -> Bool) throws(ActivityLogError) -> HistoryPieceResume? {
        guard bytes.count >= 4, resume.offset <= bytes.count - 4 else { throw .malformed("resume past the events", offset: resume.offset) }
        let result: Result<(HistoryPieceResume, Bool), ActivityLogError> = bytes.withUnsafeBytes { p in
            let window = UnsafeRawBufferPointer(rebasing: p[resume.offset..<(p.count - 4)])
            do throws(ActivityLogError) { return .success(try events(in: window, from: resume, reachesEnd: true, body)) } catch { return .failure(error) }
        }
        let (at, ended) = try result.get()
        return ended ? nil : at
    }

    /// `events` over a window of a piece: `window` holds the piece's bytes from `resume.offset`
    /// on, through its `00` end when `reachesEnd` (the file CRC not included). Short of the end,
    /// an event is read only when `maxEventBytes` remain, so none is cut. Returns where it stopped
    /// and whether the events ended. What a reader holds is one window, whatever the piece's size.
    package static func events(in window: UnsafeRawBufferPointer, from resume: HistoryPieceResume, reachesEnd: Bool,
                               _ body: (HistoryPieceEvent) -> Bool) throws(ActivityLogError) -> (HistoryPieceResume, Bool) {
        var r = ByteReader(window)
        var at = resume
        do throws(CodecError) {
            while reachesEnd || r.remaining >= maxEventBytes {
                guard let (e, _) = try decodeEvent(&r, zone: at.zone, authors: &at.authors, previous: &at.previousClock) else {
                    guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
                    at.offset = resume.offset + r.offset
                    return (at, true)
                }
                at.index += 1
                at.offset = resume.offset + r.offset
                if !body(e) { return (at, false) }
            }
            return (at, false)
        } catch {
            throw .malformed(error.description, offset: resume.offset + error.offset)
        }
    }
}

extension HistoryPieceEncoder {
    /// Adds one event as a piece stores it (its add text as given).
    package mutating func add(_ e: HistoryPieceEvent) {
        write(kind: e.kind, entry: e.entry, author: e.author, clock: e.clock, wall: e.wallTime, item: e.item,
              addText: e.addText, hasAddText: e.addText != nil, text: e.text)
    }
}

extension ActivityLog {
    /// Every stored event as a piece would hold it, in recording order (an add carries its
    /// item's text when it is the add that text came from).
    package func pieceEvents() -> [HistoryPieceEvent] {
        var out: [HistoryPieceEvent] = []
        out.reserveCapacity(count)
        forEachStoredEvent { kind, entry, author, clock, wall, item, text, itemText in
            out.append(HistoryPieceEvent(kind: kind, entry: entry, author: author, clock: clock, wallTime: wall, item: item,
                                         addText: itemText, text: text))
        }
        return out
    }
}
