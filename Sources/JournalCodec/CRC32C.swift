import CCRC32C

/// CRC32C (Castagnoli). Every checksum in the format is this function.
@usableFromInline package enum CRC32C {
    /// Extends `crc` with `bytes`: `extend(extend(0, a), b) == extend(0, a + b)`.
    @inlinable
    package static func extend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return jl_crc32c_extend(crc, base, bytes.count)
    }

    @inlinable
    package static func extend(_ crc: UInt32, _ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { extend(crc, $0) }
    }

    @usableFromInline package static func checksum(_ bytes: [UInt8]) -> UInt32 { extend(0, bytes) }

    /// The table-driven fallback, for tests that compare it with the hardware path.
    @usableFromInline package static func portableChecksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { jl_crc32c_extend_portable(0, $0.baseAddress, $0.count) }
    }

    @usableFromInline package static var isHardwareAccelerated: Bool { jl_crc32c_hardware() != 0 }
}
