import JournalSyncWire
import JournalTesting

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    WireFuzzChecks.accounts(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
