#if os(Linux) && canImport(Glibc)
import Glibc
#endif

/// One helper thread running one closure, joined by its owner: what `TwoThreads` and
/// `PageWarmer` share. Linux with more than one processor only (`available`); elsewhere `start`
/// returns nil and the caller does the work itself.
final class HelperThread: @unchecked Sendable {
    /// Whether a second core can take work here.
    static let available: Bool = {
        #if os(Linux) && canImport(Glibc)
        return sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1
        #else
        return false
        #endif
    }()

    private let body: () -> Void
    private var joined = false
    #if os(Linux) && canImport(Glibc)
    private var thread = pthread_t()
    #endif

    private init(_ body: @escaping () -> Void) { self.body = body }

    /// Starts `body` on a new thread, or returns nil (no second core, or no thread could be
    /// started). The caller must `join()` before anything `body` uses goes away.
    static func start(_ body: @escaping () -> Void) -> HelperThread? {
        #if os(Linux) && canImport(Glibc)
        guard available else { return nil }
        let h = HelperThread(body)
        // Retained for the thread, which releases it when `body` returns.
        let context = Unmanaged.passRetained(h).toOpaque()
        let started = pthread_create(&h.thread, nil, { context in
            let h = Unmanaged<HelperThread>.fromOpaque(context!).takeRetainedValue()
            h.body()
            return nil
        }, context)
        guard started == 0 else {
            Unmanaged<HelperThread>.fromOpaque(context).release()
            h.joined = true
            return nil
        }
        return h
        #else
        return nil
        #endif
    }

    /// Waits for `body` to return. Calling it again does nothing.
    func join() {
        guard !joined else { return }
        joined = true
        #if os(Linux) && canImport(Glibc)
        pthread_join(thread, nil)
        #endif
    }
}
