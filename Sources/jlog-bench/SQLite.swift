import CSQLite
import JournalLog

/// Inserts every entry of `set` in transactions of `batchSize` rows: how the benchmark fills a
/// database the way an application would.
func insertAll(_ db: SQLiteDB, _ set: EntrySet, batchSize: Int) throws {
    let ins = try db.prepare(SQLiteDB.insertSQL)
    defer { sqlite3_finalize(ins) }
    var i = 0
    while i < set.count {
        try db.exec("BEGIN")
        for k in i..<min(i + batchSize, set.count) {
            bindEntry(ins, set.entries[k], set.keys[k])
            stepInsert(db, ins)
        }
        try db.exec("COMMIT")
        i += batchSize
    }
}

/// SQLITE_TRANSIENT: SQLite copies bound text and blobs before the bind call returns.
nonisolated(unsafe) let sqliteTransient = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)

struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var description: String { "SQLite error \(code): \(message)" }
}

/// A thin wrapper over one sqlite3 connection, used the way an application would use the C API.
/// Not thread-safe by itself: the concurrent benchmark serialises access with its own lock.
final class SQLiteDB: @unchecked Sendable {
    static let schema = """
        CREATE TABLE journal(seq INTEGER PRIMARY KEY, zone TEXT, id BLOB, author TEXT, ts INTEGER, hlc INTEGER,
                             op INTEGER, item BLOB, text TEXT, after BLOB);
        CREATE INDEX journal_zone_seq ON journal(zone, seq);
        """
    static let insertSQL = "INSERT INTO journal(zone, id, author, ts, hlc, op, item, text, after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    static let selectAllSQL = "SELECT seq, zone, id, author, ts, hlc, op, item, text, after FROM journal ORDER BY seq"

    let path: String
    private(set) var db: OpaquePointer?

    init(path: String) throws {
        self.path = path
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard rc == SQLITE_OK else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "open failed"
            sqlite3_close(db)
            throw SQLiteError(code: rc, message: msg)
        }
    }

    /// A new database in WAL mode with the journal table, at `synchronous` (NORMAL or FULL).
    static func create(path: String, synchronous: String) throws -> SQLiteDB {
        let d = try SQLiteDB(path: path)
        try d.exec("PRAGMA journal_mode=WAL")
        try d.exec("PRAGMA synchronous=\(synchronous)")
        try d.exec(schema)
        return d
    }

    func exec(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>? = nil
        let rc = sqlite3_exec(db, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? "?"
            sqlite3_free(err)
            throw SQLiteError(code: rc, message: msg + " in: " + sql)
        }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var st: OpaquePointer? = nil
        let rc = sqlite3_prepare_v2(db, sql, -1, &st, nil)
        guard rc == SQLITE_OK, let st else { throw SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(db))) }
        return st
    }

    func errorMessage() -> String { String(cString: sqlite3_errmsg(db)) }

    /// Runs `sql` and returns the first column of the first row as an integer.
    func scalar(_ sql: String) throws -> Int64 {
        let st = try prepare(sql)
        defer { sqlite3_finalize(st) }
        guard sqlite3_step(st) == SQLITE_ROW else { throw SQLiteError(code: 0, message: "no row: " + sql) }
        return sqlite3_column_int64(st, 0)
    }

    func close() {
        if let d = db { sqlite3_close_v2(d) }
        db = nil
    }

    deinit { close() }
}

/// Binds one entry to the prepared INSERT (seq is assigned by SQLite as the rowid).
@inline(__always)
func bindEntry(_ st: OpaquePointer, _ e: JournalEntry, _ k: RowKeys) {
    var zone = e.zone, author = e.author
    _ = zone.withUTF8 { sqlite3_bind_text(st, 1, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count), sqliteTransient) }
    var id = (k.idHi.bigEndian, k.idLo.bigEndian)
    withUnsafeBytes(of: &id) { _ = sqlite3_bind_blob(st, 2, $0.baseAddress, 16, sqliteTransient) }
    _ = author.withUTF8 { sqlite3_bind_text(st, 3, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count), sqliteTransient) }
    sqlite3_bind_int64(st, 4, e.wallTime)
    sqlite3_bind_int64(st, 5, Int64(bitPattern: e.clock.rawValue))
    sqlite3_bind_int64(st, 6, Int64(e.operation.kindByte))
    var item = (k.itemHi.bigEndian, k.itemLo.bigEndian)
    withUnsafeBytes(of: &item) { _ = sqlite3_bind_blob(st, 7, $0.baseAddress, 16, sqliteTransient) }
    if case .add(_, var text, _) = e.operation {
        _ = text.withUTF8 { p in
            if p.isEmpty { sqlite3_bind_text(st, 8, "", 0, sqliteTransient) } else {
                sqlite3_bind_text(st, 8, UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(p.count), sqliteTransient)
            }
        }
    } else {
        sqlite3_bind_null(st, 8)
    }
    sqlite3_bind_null(st, 9)
}

/// Steps a bound INSERT once and resets it.
@inline(__always)
func stepInsert(_ db: SQLiteDB, _ st: OpaquePointer) {
    let rc = sqlite3_step(st)
    if rc != SQLITE_DONE { fail("sqlite insert", SQLiteError(code: rc, message: db.errorMessage())) }
    sqlite3_reset(st)
}

// MARK: Reading rows back as entries

@inline(__always) private func columnString(_ st: OpaquePointer, _ i: Int32) -> String {
    guard let p = sqlite3_column_text(st, i) else { return "" }
    let n = Int(sqlite3_column_bytes(st, i))
    return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
}

@inline(__always) private func columnUUID(_ st: OpaquePointer, _ i: Int32) -> CompactID? {
    guard let p = sqlite3_column_blob(st, i), sqlite3_column_bytes(st, i) == 16 else { return nil }
    let hi = UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
    let lo = UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    return CompactID(uuidHigh: hi, low: lo)
}

/// The current row as a JournalEntry (every column touched), with its seq.
@inline(__always)
func rowEntry(_ st: OpaquePointer) -> (Int64, JournalEntry) {
    let seq = sqlite3_column_int64(st, 0)
    let zone = columnString(st, 1)
    let id = columnUUID(st, 2) ?? CompactID(uuidHigh: 0, low: 0)
    let author = columnString(st, 3)
    let ts = sqlite3_column_int64(st, 4)
    let hlc = HybridTime(rawValue: UInt64(bitPattern: sqlite3_column_int64(st, 5)))
    let op = sqlite3_column_int64(st, 6)
    let item = columnUUID(st, 7) ?? CompactID(uuidHigh: 0, low: 0)
    let text = columnString(st, 8)
    let after = columnUUID(st, 9)
    let operation: EntryOperation = op == 1 ? .add(item: item, text: text, after: after) : .delete(item: item)
    return (seq, JournalEntry(id: id, zone: zone, author: author, wallTime: ts, clock: hlc, operation: operation))
}
