@_exported import JournalCodec
