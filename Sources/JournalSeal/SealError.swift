import JournalCodec

/// Why a text was not sealed or a sealed value not opened (Spec/SEALING.md §2).
public enum SealError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is over 4,096 bytes of UTF-8 (FORMAT.md §8): nothing was sealed.
    case textTooLong(bytes: Int)
    /// The value is sealed under another epoch than the key's, or its binding names another.
    case wrongEpoch(key: UInt64, value: UInt64)
    /// The value does not open under this key and binding: another list's key, a value moved to
    /// another entry, item, author or list, or bytes changed on the way.
    case cannotOpen
    /// It opened, but what it holds is not a padded text (a sealer that does not follow the spec).
    case notAText
    /// A key of the wrong size, or a back link that is not one.
    case badKey(String)
    /// A key record holds no wrap for this account's key: it was not a member at that epoch (or
    /// its keys changed since).
    case notAMember(epoch: UInt64)
    /// A key record's signature is not its creator's, or its creator is not whom it names.
    case badSignature(epoch: UInt64)
    /// The list's key records skip an epoch or repeat one.
    case brokenChain(String)

    public var description: String {
        switch self {
        case .textTooLong(let bytes): "a text of \(bytes) bytes of UTF-8 is over the limit of \(Limits.maxTextBytes): nothing was sealed"
        case .wrongEpoch(let key, let value): "the value is sealed under epoch \(value), the key is epoch \(key)"
        case .cannotOpen: "the sealed value does not open under this list's key: another list's key, or a value moved or changed"
        case .notAText: "the sealed value opened but holds no padded text"
        case .badKey(let why): "not a list key: \(why)"
        case .notAMember(let epoch): "epoch \(epoch)'s key is wrapped to no key of this account: it was not a member then"
        case .badSignature(let epoch): "the key record of epoch \(epoch) is not signed by the member it names"
        case .brokenChain(let why): "the list's key records do not follow one another: \(why)"
        }
    }
}
