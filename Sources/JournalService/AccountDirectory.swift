import Crypto
import Foundation
import JournalLog
import JournalSync
import JournalSyncWire

/// The accounts of a server and their device credentials (Spec/SYNC.md §9.2), in
/// `STORE/service/accounts`: for each credential its id, account, SHA-256 of its secret, when it
/// was issued, when it expires and whether it was revoked. Never a secret. `jlog accounts` edits
/// the file (under a lock, replaced atomically) while `jlog serve` runs; the server notices a new
/// file on the next request, so a revoked credential is refused from then on.
package final class AccountDirectory: CredentialCheck, @unchecked Sendable {
    /// A credential's record in the accounts file (`AccountsFileCodec`).
    package typealias Credential = AccountCredential

    package let path: String
    private let fs: any FileSystem
    private let lock = NSLock()
    private var credentials: [String: Credential] = [:]
    private var loadedIdentity: FileIdentity?
    /// The file last read, kept open: while it is, its inode cannot be given to a new file, so a
    /// file replaced twice can never come back with the identity last read (ext4 reuses a freed
    /// inode at once) and hide a revocation.
    private var pinned: (any StorageFile)?

    static let fileName = "service/accounts"
    static var maxFileBytes: Int { AccountsFileCodec.maxFileBytes }

    /// The directory of the server store at `store` (empty until an account is added).
    package init(store: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) {
        path = store + "/" + Self.fileName
        self.fs = fs
        try reloadIfChanged()
    }

    deinit { pinned?.close() }

    /// Re-reads the file when it was replaced since it was last read.
    private func reloadIfChanged() throws(JournalError) {
        let identity = fs.identity(of: path)
        guard identity != loadedIdentity || (identity == nil && !credentials.isEmpty) else { return }
        guard identity != nil else {
            credentials = [:]
            loadedIdentity = nil
            pinned?.close()
            pinned = nil
            return
        }
        let bytes = try readAndPin()
        guard let parsed = AccountsFileCodec.decode(bytes) else { throw JournalError.invalidEntry("\(path) is damaged; restore it from a backup or remove it and issue new credentials") }
        credentials = Dictionary(parsed.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The file's bytes, read through a handle kept open (`pinned`); `loadedIdentity` is the
    /// identity the path had before the read, so a file replaced meanwhile is read again next time.
    private func readAndPin() throws(JournalError) -> [UInt8] {
        let before = fs.identity(of: path)
        let file = try fs.openForReading(path)
        let bytes: [UInt8]
        do throws(JournalError) { bytes = try AtomicFile.read(file, path: path, limit: Self.maxFileBytes) } catch {
            file.close()
            throw error
        }
        pinned?.close()
        pinned = file
        // Replaced between the look and the open: this read is the newer file's, and the next
        // request reads again (the identity kept is the older one).
        loadedIdentity = before
        return bytes
    }

    /// The account `text` authenticates, or refused: unknown, malformed, tampered, expired or
    /// revoked credentials are all refused alike. An accounts file that was replaced and cannot
    /// be read is `unavailable`: the operator must repair it, and no device is signed out meanwhile.
    package func authenticate(_ text: String, now: Int64) -> Authentication {
        guard let presented = DeviceCredential(text) else { return .refused }
        let record: Credential?
        do throws(StorageError) { record = try current { $0[presented.id] } } catch { return .unavailable(error) }
        guard let record, record.account == presented.account, record.isValid(now: now),
              Self.secret(presented.secret, hashesTo: record.secretHash) else { return .refused }
        return .accepted(account: record.account)
    }

    /// Whether an account has a credential that is valid now (only such accounts can be invited).
    package func accountExists(_ account: String, now: Int64) throws(StorageError) -> Bool {
        try current { $0.values.contains { $0.account == account && $0.isValid(now: now) } }
    }

    /// `body` over the credentials as the file holds them now; `StorageError` when it was
    /// replaced by one that cannot be read (never the credentials of before, never none).
    private func current<T>(_ body: ([String: Credential]) -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do throws(JournalError) { try reloadIfChanged() } catch {
            let failure: StorageError = if case .io = error { .unavailable(error.description) } else { .damaged(error.description) }
            StorageFailures.note(failure)
            throw failure
        }
        return body(credentials)
    }

    package func list() throws(JournalError) -> [Credential] {
        lock.lock()
        defer { lock.unlock() }
        try reloadIfChanged()
        return credentials.values.sorted { ($0.account, $0.issuedAt, $0.id) < ($1.account, $1.issuedAt, $1.id) }
    }

    /// Issues a credential for `account` (creating the account): the only time its secret exists
    /// outside the device that keeps it.
    package func issue(account: String, now: Int64, expiresAt: Int64?) throws(JournalError) -> DeviceCredential {
        let (credential, record) = try Self.newCredential(account: account, now: now, expiresAt: expiresAt)
        try modify { list in list.append(record) }
        return credential
    }

    /// A new credential for `account` and the record a server keeps of it (its secret's hash
    /// only), wherever the server keeps it (this file, or a shared database).
    package static func newCredential(account: String, now: Int64, expiresAt: Int64?) throws(JournalError) -> (DeviceCredential, Credential) {
        if let why = SyncNames.accountRefusal(account) { throw JournalError.invalidEntry(why) }
        let credential = DeviceCredential.issue(for: account)
        return (credential, Credential(id: credential.id, account: account, secretHash: hash(credential.secret),
                                       issuedAt: now, expiresAt: expiresAt, revokedAt: nil))
    }

    /// Revokes the credential with this id, or every credential of the account with this name;
    /// returns how many it revoked.
    @discardableResult
    package func revoke(_ idOrAccount: String, now: Int64) throws(JournalError) -> Int {
        var revoked = 0
        try modify { list in
            for i in list.indices where (list[i].id == idOrAccount || list[i].account == idOrAccount) && list[i].revokedAt == nil {
                list[i].revokedAt = now
                revoked += 1
            }
        }
        return revoked
    }

    /// Read, change, write back atomically, under a lock on `service/` so two `jlog accounts`
    /// never lose each other's change.
    func modify(_ change: (inout [Credential]) throws(JournalError) -> Void) throws(JournalError) {
        // The store's directory too: accounts may be added before the server first runs.
        // Not NSString's `deletingLastPathComponent`: Foundation on Linux traps on a
        // one-character relative path ("s"), as a store named `s` is.
        let dir = parentDirectory(path), store = parentDirectory(dir)
        for d in [store, dir] where fs.kind(of: d) == .missing {
            try fs.createDirectory(d)
            try fs.syncDirectory(parentDirectory(d))
        }
        let dirLock = try fs.lockDirectory(dir)
        defer { dirLock.unlock() }
        lock.lock()
        defer { lock.unlock() }
        try reloadIfChanged()
        var list = credentials.values.sorted { ($0.issuedAt, $0.id) < ($1.issuedAt, $1.id) }
        try change(&list)
        try AtomicFile.write(AccountsFileCodec.encode(list), to: path, fs: fs)
        credentials = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        // Pinned (and so read back) like any other load.
        loadedIdentity = nil
        try reloadIfChanged()
    }

    /// SHA-256 of `secret`, in lowercase hex (what the accounts file keeps).
    static func hash(_ secret: String) -> String {
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for b in digest(secret) {
            hex.append(hexDigit(b >> 4))
            hex.append(hexDigit(b & 15))
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// Whether `hash(secret) == hexHash`, in time that does not depend on where they differ.
    /// Every request checks one: the digest is compared digit by digit as it is read, with no
    /// string built.
    package static func secret(_ secret: String, hashesTo hexHash: String) -> Bool {
        guard hexHash.utf8.count == 64 else { return false }
        var d: UInt8 = 0
        var stored = hexHash.utf8.makeIterator()
        for b in digest(secret) {
            d |= hexDigit(b >> 4) ^ (stored.next() ?? 0)
            d |= hexDigit(b & 15) ^ (stored.next() ?? 0)
        }
        return d == 0
    }

    private static func digest(_ secret: String) -> SHA256.Digest {
        var s = secret
        return s.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
    }

    @inline(__always) private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }
}
