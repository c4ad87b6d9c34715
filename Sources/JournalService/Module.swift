// JournalService (layer 4): the reference sync service over a storage, the engine's JournalStore
// or a shared PostgreSQL database (JournalPostgres) (accounts'
// databases, sharing, uploads, the feed, compaction; Spec/SYNC.md), usable in process through
// `LocalService`; `ServiceCore` is a façade over its parts. It imports the layers below and
// swift-crypto (credential hashing); never SwiftNIO or HTTP (JournalServer puts HTTP in front).
