import JournalLog
import ListModel
import Synchronization

/// Where recent history pages ended inside pieces, so that the next page resumes there without
/// decoding the piece's start again (Spec/SYNC.md §3.12). At most 64, all dropped when full; a
/// page whose position is not here (another node answered the last, a restart, a drop) reads the
/// piece from its start: slower, never different.
final class HistoryResumes: Sendable {
    struct Key: Hashable {
        var zone: String
        var incarnation: SequenceNumber
        var sequence: SequenceNumber
        var crc: UInt32
        var index: Int
    }

    private static let capacity = 64
    private let held = Mutex<[Key: HistoryPieceResume]>([:])

    func take(_ key: Key) -> HistoryPieceResume? {
        held.withLock { $0.removeValue(forKey: key) }
    }

    func put(_ key: Key, _ resume: HistoryPieceResume) {
        held.withLock { held in
            if held.count >= Self.capacity { held.removeAll() }
            held[key] = resume
        }
    }
}
