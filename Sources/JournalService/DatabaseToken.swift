import JournalLog
import JournalSync

/// A database token (Spec/SYNC.md §3.3): `jdb2.SCOPE.P.` and a store database token (which says
/// whose store and epoch it is). `SCOPE` binds it to the database it was issued for (I2); `P`,
/// when present, ends a page short of the horizon: the page covered every change through `P`
/// and nothing after it, and the store token is at or above `P`.
struct DatabaseToken: Equatable {
    static let prefix = "jdb2."

    var scope: DatabaseScope
    var cursor: SequenceNumber?
    var store: FeedToken

    /// The token's text, as clients hold it.
    var serviceToken: ServiceToken {
        ServiceToken(Self.prefix + scope.rawValue + "." + (cursor.map { String($0) } ?? "") + "." + store.text)
    }

    /// The token `text` stands for, or nil when it is not a database token of `scope` (garbled,
    /// or another database's): the service answers such a token `tokenExpired`.
    init?(_ text: String, scope: DatabaseScope) {
        guard text.hasPrefix(Self.prefix) else { return nil }
        let fields = text.dropFirst(Self.prefix.count).split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == scope.rawValue else { return nil }
        if fields[1].isEmpty {
            cursor = nil
        } else {
            guard let p = SequenceNumber(fields[1]) else { return nil }
            cursor = p
        }
        self.scope = scope
        store = FeedToken(String(fields[2]))
    }

    init(scope: DatabaseScope, cursor: SequenceNumber?, store: FeedToken) {
        self.scope = scope
        self.cursor = cursor
        self.store = store
    }
}
