#if os(Linux) && canImport(Glibc)
import Glibc
#endif

/// Two halves of one loop on two cores: `run` calls `other` on a helper thread and `here` on this
/// one, and returns only when both have returned, so neither closure escapes the call.
/// The closures must touch disjoint memory (or only read shared memory).
///
/// Linux with more than one processor only; elsewhere, or when no thread can be started, both
/// run here, one after the other.
enum TwoThreads {
    /// Below this much work (the caller's count), a thread costs more than it saves.
    static let minimumWork = 65_536

    static func run(_ other: () -> Void, _ here: () -> Void) {
        #if os(Linux) && canImport(Glibc)
        guard sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 else { return sequential(other, here) }
        withoutActuallyEscaping(other) { other in
            let box = Work(other)
            var thread = pthread_t()
            // Unretained: the join below waits for the helper before `box` can go away.
            let started = pthread_create(&thread, nil, { context in
                Unmanaged<Work>.fromOpaque(context!).takeUnretainedValue().body()
                return nil
            }, Unmanaged.passUnretained(box).toOpaque())
            guard started == 0 else { return sequential(box.body, here) }
            here()
            pthread_join(thread, nil)
            withExtendedLifetime(box) {}
        }
        #else
        sequential(other, here)
        #endif
    }

    private static func sequential(_ other: () -> Void, _ here: () -> Void) {
        other()
        here()
    }

    private final class Work: @unchecked Sendable {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
}
