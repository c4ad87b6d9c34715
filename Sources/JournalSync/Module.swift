// JournalSync (layer 4): the sync protocol a service offers (CloudKit-shaped: `SyncService`, a
// call as a value in `SyncCall`) and the device's engine (`SyncEngine`: queue, push, pull,
// re-fetch, sharing, shopping mode; Spec/SYNC.md). Transport-free: it imports JournalLog,
// JournalQuery and ListModel, never Foundation networking, SwiftNIO, crypto or the wire binding.

// `ZoneID`, which every call here takes, is the log's (JournalLog): an app that imports only
// this module names its lists without a second import.
@_exported import JournalLog
