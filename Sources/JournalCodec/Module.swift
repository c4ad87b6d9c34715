// JournalCodec (layer 1): the engine's byte formats and nothing else — entries and their JSON
// lines, frames and segment headers, batches, zone records, the zone index's files, consumer and
// epoch records, change tokens, CRC32C and LZ4 (Spec/FORMAT.md, INDEX.md, TOKENS.md). Pure: no
// I/O, no threads, no clock; every parser is fuzzed and throws a `CodecError` on bad input.
// It imports only its C helpers (CCRC32C, CLZ4): no Foundation I/O, no JournalLog or anything above.
