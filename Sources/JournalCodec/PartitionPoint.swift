extension Array {
    /// The index of the first element for which `belongsToFirstPart` is false (the array must be
    /// partitioned by it): a binary search.
    @inlinable
    package func partitionPoint(_ belongsToFirstPart: (Element) -> Bool) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if belongsToFirstPart(self[mid]) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
