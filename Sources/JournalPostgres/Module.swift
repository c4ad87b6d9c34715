// JournalPostgres (layer 4): the sync service's storage over PostgreSQL (Spec/SYNC.md §11), for
// nodes that share one database instead of each keeping the engine's own store. It holds no
// text it must read: entries are stored as their FORMAT.md §6 encodings, validated once, never
// re-encoded, with their ids and positions beside them. Server-side only: an app never links it.
