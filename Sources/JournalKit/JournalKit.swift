// An app's one import (`import JournalKit`): the engine and its store (JournalLog, JournalCodec's
// ids and entries), the list model (ListModel), lists read and observed (JournalQuery), the sync
// engine and `ShoppingList` (JournalSync), device credentials (JournalSyncWire) and the
// URLSession HTTP client (JournalSyncHTTP). Nothing here links SwiftNIO, BoringSSL or PostgreSQL.
@_exported import JournalCodec
@_exported import JournalLog
@_exported import JournalQuery
@_exported import JournalSync
@_exported import JournalSyncHTTP
@_exported import JournalSyncWire
@_exported import ListModel
