// JournalSyncHTTP (layer 4, a transport): the sync client of `jlog serve` over a small transport
// protocol, with a URLSession transport (Foundation; FoundationNetworking on Linux) so an app
// builds neither SwiftNIO nor BoringSSL. It imports JournalSync, JournalSyncWire and JournalLog;
// never SwiftNIO, AsyncHTTPClient or crypto (JournalSyncHTTPNIO has the NIO transport).
