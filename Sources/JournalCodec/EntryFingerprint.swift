/// A 64-bit fingerprint of an entry's encoding (FORMAT.md §6): how a store tells a retry (the
/// same id with the same bytes: acknowledged, not stored again) from a conflict (the same id
/// with other bytes: refused, TOKENS.md §2). Seeded per process, so it is never stored and ids
/// cannot be crafted to collide; a conflict goes unnoticed with probability 2^-64.
@usableFromInline package enum EntryFingerprint {
    /// Matches every encoding: the stored entry was replaced by the compactor (a `place` over an
    /// add), so a late retry of the original add is a retry, not a conflict.
    @usableFromInline package static let any: UInt64 = 0

    @usableFromInline package static func of(_ encoding: UnsafeRawBufferPointer) -> UInt64 {
        var h = Hasher()
        h.combine(bytes: encoding)
        let v = UInt64(bitPattern: Int64(h.finalize()))
        return v == any ? 1 : v
    }

    @usableFromInline package static func of(_ encoding: [UInt8]) -> UInt64 { encoding.withUnsafeBytes { of($0) } }

    /// The fingerprint an entry is stored under: `any` for a compactor's `place`.
    @usableFromInline package static func of(_ entry: JournalEntry) -> UInt64 {
        if case .place = entry.operation { return any }
        return of(EntryCodec.encode(entry))
    }

    /// True when an entry with fingerprint `new` may be acknowledged as the stored one.
    @inlinable package static func matches(stored: UInt64, new: UInt64) -> Bool { stored == any || stored == new }
}
