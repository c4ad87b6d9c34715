import Foundation
import Testing
@testable import JournalLog

@Suite struct CRC32CTests {
    @Test func checkStringMatchesStandardVector() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    }

    @Test func thirtyTwoZeroBytesMatchStandardVector() {
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    }

    @Test func thirtyTwoOnesBytesMatchStandardVector() {
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    }

    @Test func ascendingBytesMatchStandardVector() {
        #expect(CRC32C.checksum(Array(0..<32)) == 0x46DD_794E)
    }

    @Test func emptyInputLeavesTheValueUnchanged() {
        #expect(CRC32C.checksum([]) == 0)
        #expect(CRC32C.extend(0x1234_5678, []) == 0x1234_5678)
        #expect(CRC32C.portableChecksum([]) == 0)
    }

    @Test func portableImplementationMatchesStandardVectors() {
        #expect(CRC32C.portableChecksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.portableChecksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.portableChecksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.portableChecksum(Array(0..<32)) == 0x46DD_794E)
    }

    @Test func extendingPiecewiseEqualsChecksumOfTheWhole() {
        var rng = SplitMix64(seed: 0xC0FFEE)
        let data = rng.bytes(300)
        let whole = CRC32C.checksum(data)
        for split in 0...data.count {
            let a = Array(data[..<split]), b = Array(data[split...])
            #expect(CRC32C.extend(CRC32C.extend(0, a), b) == whole, "split at \(split)")
        }
    }

    @Test func extendingInThreePiecesEqualsChecksumOfTheWhole() {
        let data = Array("The quick brown fox jumps over the lazy dog".utf8)
        let whole = CRC32C.checksum(data)
        for i in 0...data.count {
            for j in i...data.count {
                let c = CRC32C.extend(CRC32C.extend(CRC32C.extend(0, Array(data[..<i])), Array(data[i..<j])), Array(data[j...]))
                #expect(c == whole)
            }
        }
    }

    @Test func hardwareAndPortablePathsAgreeOnRandomBuffersOfManyLengthsAndAlignments() {
        var rng = SplitMix64(seed: 42)
        let buffer = rng.bytes(4096 + 64)
        var lengths = Array(0...130) + [255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 4095, 4096]
        for _ in 0..<50 { lengths.append(Int(rng.next() % 4096)) }
        buffer.withUnsafeBytes { raw in
            for length in lengths {
                for offset in 0..<16 {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[offset..<offset + length])
                    let fast = CRC32C.extend(0, slice)
                    let portable = CRC32C.portableChecksum(Array(slice))
                    #expect(fast == portable, "length \(length), offset \(offset)")
                }
            }
        }
    }

    @Test func hardwareAndPortablePathsAgreeWhenExtendingANonZeroValue() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let a = rng.bytes(Int(rng.next() % 100))
            let b = rng.bytes(Int(rng.next() % 100))
            #expect(CRC32C.extend(CRC32C.extend(0, a), b) == CRC32C.portableChecksum(a + b))
        }
    }

    @Test func singleBitFlipsAlwaysChangeTheChecksum() {
        var rng = SplitMix64(seed: 99)
        let data = rng.bytes(64)
        let original = CRC32C.checksum(data)
        for i in 0..<data.count {
            for bit in 0..<8 {
                var d = data
                d[i] ^= UInt8(1) << UInt8(bit)
                #expect(CRC32C.checksum(d) != original)
            }
        }
    }
}
