// JournalSeal: sealed lists (Spec/SEALING.md): a list's epoch keys, and item texts, names and
// colours sealed and opened with them, so that the service stores, compacts and snapshots lists
// whose text it cannot read. Its own product, so that the engine, the list model and the service
// stay free of cryptography: on Apple platforms it uses CryptoKit (no BoringSSL in an app); on
// Linux, swift-crypto (the `Sealing` trait, which `Server` enables).
#if canImport(CryptoKit)
@_exported import CryptoKit
#elseif canImport(Crypto)
@_exported import Crypto
#else
#error("JournalSeal needs CryptoKit, or swift-crypto through the package's Sealing trait")
#endif
