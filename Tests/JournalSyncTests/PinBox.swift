import Foundation
import JournalSeal

/// The key pins an app keeps for one device (Spec/SEALING.md §4.4), shared between the test and
/// the device's sealing (`SealedListKeys(account:pins:)`), which reads them on every rotation.
final class PinBox: @unchecked Sendable {
    private let lock = NSLock()
    private var pins = KeyPins()

    var value: KeyPins { lock.withLock { pins } }

    func update(_ body: (inout KeyPins) -> Void) { lock.withLock { body(&pins) } }
}
