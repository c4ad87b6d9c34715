import JournalSeal

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    SealInputChecks.check(Array(UnsafeRawBufferPointer(start: data, count: size)))
    return 0
}
