import Foundation
import JournalCodec
import JournalSync

/// The property the sync engine's fuzz target checks (`Fuzz/FuzzSyncState`), shared with the test
/// that replays their corpora: returns normally on any input unless a round trip breaks.
package enum SyncFuzzChecks {
    /// The sync state file (`sync/state`, Spec/SYNC.md §7.2) never crashes its reader; what
    /// decodes encodes to bytes that decode to the same state, and encoding that is canonical.
    /// The input is tried as it is and with its CRC made right, so that the fuzzer reaches the
    /// fields.
    package static func syncState(_ bytes: UnsafeRawBufferPointer) {
        func roundTrip(_ b: [UInt8]) {
            guard let state = try? SyncStateCodec.decode(b) else { return }
            let again = SyncStateCodec.encode(state)
            guard let second = try? SyncStateCodec.decode(again), second == state else { fatalError("sync state round trip failed") }
            guard SyncStateCodec.encode(second) == again else { fatalError("sync state encoding is not canonical") }
        }
        let input = Array(bytes)
        roundTrip(input)
        guard input.count >= 9, input.count <= 1 << 20 else { return }
        var fixed = input
        let crc = CRC32C.checksum(Array(input[..<(input.count - 4)]))
        withUnsafeBytes(of: crc.littleEndian) { fixed.replaceSubrange((input.count - 4)..., with: $0) }
        roundTrip(fixed)
    }

    package static let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "FuzzSyncState": syncState,
    ]
}
