// JournalServer (layer 4, a transport): `jlog serve`'s HTTP server (Hummingbird) over a
// `ServiceBackend` — authentication, per-zone access, limits, the hint channel. It imports the
// service, the wire binding, Hummingbird and NIO; nothing imports it but the CLI and its tests.
