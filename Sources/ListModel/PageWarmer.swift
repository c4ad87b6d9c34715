#if os(Linux) && canImport(Glibc)
import Glibc
#endif

/// Has the kernel back fresh memory on another thread while this one computes.
///
/// The first write to each page of a new allocation is a page fault, and on a virtual machine
/// one costs microseconds (`jlog-bench`'s `fresh_memory`: about 4 µs per 4 KiB here). A bulk
/// replay fills a hundred megabytes of records and items, so a third of its time went to those
/// faults. The reducer knows the ranges it is about to fill; a helper thread asks the kernel to
/// populate them (`MADV_POPULATE_WRITE`, front to back, a megabyte at a time) while the reducer
/// works, on the machine's other core. The helper never reads or writes the memory itself, so it
/// cannot race with the thread filling it. Linux only; elsewhere, and for small ranges, it does
/// nothing. Always `finish()` before the ranges are freed.
final class PageWarmer: @unchecked Sendable {
    /// Below this, a thread costs more than the faults it saves.
    static let minimumBytes = 8 << 20

    private let ranges: [(start: UnsafeMutableRawPointer, bytes: Int)]
    #if os(Linux) && canImport(Glibc)
    private var thread = pthread_t()
    #endif

    private init(_ ranges: [(start: UnsafeMutableRawPointer, bytes: Int)]) { self.ranges = ranges }

    /// Starts warming the whole pages inside `ranges`, or returns nil when there is too little to
    /// warm or no way to do it here.
    static func start(_ ranges: [UnsafeMutableRawBufferPointer]) -> PageWarmer? {
        #if os(Linux) && canImport(Glibc)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var whole: [(start: UnsafeMutableRawPointer, bytes: Int)] = []
        for r in ranges {
            guard let base = r.baseAddress else { continue }
            let first = (Int(bitPattern: base) + page - 1) / page * page
            let end = (Int(bitPattern: base) + r.count) / page * page
            if end > first { whole.append((UnsafeMutableRawPointer(bitPattern: first)!, end - first)) }
        }
        guard whole.reduce(0, { $0 + $1.bytes }) >= minimumBytes else { return nil }
        let w = PageWarmer(whole)
        let started = pthread_create(&w.thread, nil, { context in
            Unmanaged<PageWarmer>.fromOpaque(context!).takeUnretainedValue().populate()
            return nil
        }, Unmanaged.passUnretained(w).toOpaque())
        return started == 0 ? w : nil
        #else
        return nil
        #endif
    }

    /// Waits for the helper thread.
    func finish() {
        #if os(Linux) && canImport(Glibc)
        pthread_join(thread, nil)
        #endif
    }

    private func populate() {
        #if os(Linux) && canImport(Glibc)
        let populateWrite: Int32 = 23  // MADV_POPULATE_WRITE, Linux 5.14
        let step = 1 << 20
        for r in ranges {
            var done = 0
            while done < r.bytes {
                let n = min(step, r.bytes - done)
                // An older kernel refuses the advice (EINVAL): the faults then happen as before.
                guard madvise(r.start + done, n, populateWrite) == 0 else { return }
                done += n
            }
        }
        #endif
    }
}
