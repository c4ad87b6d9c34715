// JournalSyncWire (layer 4): what a client and a server of the HTTP binding must agree on — the
// JSON bodies, status codes and percent-encoding (`HTTPBinding`, Spec/SYNC.md §9), device
// credentials, and the server's accounts file. No networking of its own: it imports JournalSync,
// JournalLog and Foundation; never SwiftNIO, URLSession's transport or crypto.
