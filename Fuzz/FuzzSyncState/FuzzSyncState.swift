import JournalSync
import JournalTesting

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    SyncFuzzChecks.syncState(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
