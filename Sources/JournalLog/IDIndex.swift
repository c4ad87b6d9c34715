/// Entry id to sequence for one zone incarnation: what makes appends idempotent.
typealias IDIndex = IDMap<SequenceNumber>
