import ListModel

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
        withoutActuallyEscaping(other) { other in
            guard let helper = HelperThread.start(other) else {
                other()
                return here()
            }
            here()
            // The join is what lets `other` be treated as non-escaping.
            helper.join()
        }
    }
}

/// The query layer's threads for a reducer (`ListReducer.helpers`): a page warmer and a second
/// core for `state()`. What `ListQuery.helperThreads` turns on.
package struct HelperThreads: ReducerHelpers {
    package init() {}
    package var minimumWarmBytes: Int { PageWarmer.minimumBytes }
    package var minimumParallelWork: Int { TwoThreads.minimumWork }
    package func warm(_ ranges: [UnsafeMutableRawBufferPointer]) -> (any PageWarming)? { PageWarmer.start(ranges) }
    package func run(_ other: () -> Void, _ here: () -> Void) { TwoThreads.run(other, here) }
}
