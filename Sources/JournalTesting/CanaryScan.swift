import Foundation

/// The plaintext scan of the sealed-list tests (Spec/SEALING.md §6): unique random texts
/// (canaries) written into lists, then looked for in every byte a service holds, in each form a
/// byte dump, a log line or a JSON body could show them.
package enum CanaryScan {
    /// A fresh canary: 18 characters no list, log or key would hold by chance.
    package static func canary() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        return "zq" + String((0..<16).map { _ in alphabet[Int.random(in: 0..<32)] })
    }

    /// The forms of `text` a scan looks for: UTF-8, UTF-16 (both orders), lowercase hex, and
    /// base64 and base64url at each of the three alignments (the stable middle of each).
    package static func forms(_ text: String) -> [[UInt8]] {
        let utf8 = Array(text.utf8)
        var forms = [utf8, Array(text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }),
                     Array(text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
                     Array(utf8.map { String(format: "%02x", $0) }.joined().utf8)]
        for pad in 0..<3 {
            let b64 = Data(Array(repeating: 0, count: pad) + utf8).base64EncodedString()
            let middle = Array(b64.utf8.dropFirst(4).dropLast(4))
            forms.append(middle)
            forms.append(middle.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 })
        }
        return forms
    }

    /// The canaries any of `blobs` holds in any form.
    package static func found(_ canaries: [String], in blobs: [[UInt8]]) -> Set<String> {
        Set(canaries.filter { c in forms(c).contains { form in blobs.contains { $0.firstRange(of: form) != nil } } })
    }
}
