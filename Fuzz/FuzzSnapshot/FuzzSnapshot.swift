import ListModel
import JournalTesting

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    ListFuzzChecks.snapshot(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
