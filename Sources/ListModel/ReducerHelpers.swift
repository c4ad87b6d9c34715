/// Work a reducer may hand to other threads when its caller gives it a way to (the query layer's
/// `ListQuery.helperThreads`). The list model itself is pure: it starts no thread and asks the
/// kernel for nothing.
package protocol ReducerHelpers: Sendable {
    /// Below this many bytes of room to fill, `warm` is not worth a thread.
    var minimumWarmBytes: Int { get }
    /// Below this much work (items to build), `run` is not worth a thread.
    var minimumParallelWork: Int { get }
    /// Starts having the whole pages of `ranges` backed by memory on another thread while the
    /// reducer fills them, or returns nil (too little, or no way here). The helper never reads or
    /// writes the memory; the reducer finishes it before any range is freed or moved.
    func warm(_ ranges: [UnsafeMutableRawBufferPointer]) -> (any PageWarming)?
    /// Runs `other` on another thread and `here` on this one, and returns once both returned;
    /// the two touch disjoint memory.
    func run(_ other: () -> Void, _ here: () -> Void)
}

/// Pages being backed on another thread (`ReducerHelpers.warm`).
package protocol PageWarming: AnyObject {
    /// Stops the helper and waits for it. Calling it again does nothing.
    func finish()
}
