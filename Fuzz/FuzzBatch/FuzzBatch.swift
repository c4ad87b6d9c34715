import JournalLog
import JournalTesting

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    FuzzChecks.batch(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
