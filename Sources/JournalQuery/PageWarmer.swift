import ListModel
#if os(Linux) && canImport(Glibc)
import Glibc
import Synchronization
#endif

/// Has the kernel back fresh memory on another thread while this one computes.
///
/// The first write to each page of a new allocation is a page fault, and on a virtual machine
/// one costs microseconds (`jlog-bench`'s `fresh_memory`: 3–4 µs per 4 KiB here). A bulk replay
/// fills tens of megabytes of records, so a good part of its time went to those faults. The
/// reducer knows the ranges it is about to fill; a helper thread asks the kernel to populate them
/// (`MADV_POPULATE_WRITE`, front to back, a megabyte at a time) while the reducer works, on the
/// machine's other core. The helper never reads or writes the memory itself, so it cannot race
/// with the thread filling it.
///
/// The caller must `finish()` before any range is freed or moved (an array growing past its
/// capacity): the kernel would otherwise populate whatever is mapped there next. Linux with more
/// than one processor only; elsewhere, and for less than `minimumBytes`, `start` returns nil.
final class PageWarmer: PageWarming, @unchecked Sendable {
    /// Below this, a thread costs more than the faults it saves.
    static let minimumBytes = 8 << 20

    private let ranges: [(start: Int, bytes: Int)]
    private var helper: HelperThread?
    #if os(Linux) && canImport(Glibc)
    /// Set by `finish()`: the helper stops at its next megabyte.
    private let stop = Atomic<Bool>(false)
    #endif

    private init(_ ranges: [(start: Int, bytes: Int)]) { self.ranges = ranges }

    /// A warmer dropped without `finish()` still stops and waits for its helper.
    deinit { finish() }

    /// Starts warming the whole pages inside `ranges`, or returns nil when there is too little to
    /// warm or no way to do it here.
    static func start(_ ranges: [UnsafeMutableRawBufferPointer]) -> PageWarmer? {
        #if os(Linux) && canImport(Glibc)
        guard HelperThread.available else { return nil }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var whole: [(start: Int, bytes: Int)] = []
        for r in ranges {
            guard let base = r.baseAddress else { continue }
            let first = (Int(bitPattern: base) + page - 1) / page * page
            let end = (Int(bitPattern: base) + r.count) / page * page
            if end > first { whole.append((first, end - first)) }
        }
        guard whole.reduce(0, { $0 + $1.bytes }) >= minimumBytes else { return nil }
        let w = PageWarmer(whole)
        // Unretained: `deinit` stops and joins the helper before the warmer goes away.
        let unretained = Unmanaged.passUnretained(w)
        guard let helper = HelperThread.start({ unretained.takeUnretainedValue().populate() }) else { return nil }
        w.helper = helper
        return w
        #else
        return nil
        #endif
    }

    /// Stops the helper at its next megabyte and waits for it. Calling it again does nothing.
    func finish() {
        guard let helper else { return }
        #if os(Linux) && canImport(Glibc)
        stop.store(true, ordering: .relaxed)
        #endif
        helper.join()
        self.helper = nil
    }

    #if os(Linux) && canImport(Glibc)
    private func populate() {
        let populateWrite: Int32 = 23  // MADV_POPULATE_WRITE, Linux 5.14
        let step = 1 << 20
        for r in ranges {
            var done = 0
            while done < r.bytes {
                if stop.load(ordering: .relaxed) { return }
                let n = min(step, r.bytes - done)
                if madvise(UnsafeMutableRawPointer(bitPattern: r.start + done), n, populateWrite) != 0 {
                    // An older kernel refuses the advice: the faults then happen as before.
                    if errno == EINVAL { return }
                    break
                }
                done += n
            }
        }
    }
    #endif
}
