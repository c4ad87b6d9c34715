import Foundation

/// The first of several answers to one question: whoever gives first resumes the waiting
/// continuation, the others are dropped (a probe racing its deadline).
final class OnceAnswer: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: CheckedContinuation<String?, Never>?
    private var early: String??

    /// The continuation to resume; an answer given before it was set resumes it at once.
    func set(_ c: CheckedContinuation<String?, Never>) {
        let given: String?? = lock.withLock {
            if let early { return early }
            waiting = c
            return nil
        }
        if let given { c.resume(returning: given) }
    }

    /// Gives an answer: the first one resumes the waiter.
    func give(_ answer: String?) {
        let c: CheckedContinuation<String?, Never>? = lock.withLock {
            guard early == nil else { return nil }
            early = .some(answer)
            defer { waiting = nil }
            return waiting
        }
        c?.resume(returning: answer)
    }
}
