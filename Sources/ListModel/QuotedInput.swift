/// Input as an error message quotes it: in quotes, control characters and quotes escaped, and
/// cut short, so that a NUL or a 300-character name never reaches a log or a screen raw.
package enum QuotedInput {
    /// The most characters of the input a message shows.
    package static let maxCharacters = 40

    /// `text` quoted: `"Milk"`, `"a\u{0}b"`, `"Very long …" (300 characters)`.
    package static func quote(_ text: String) -> String {
        var out = "\""
        var shown = 0
        for scalar in text.unicodeScalars {
            guard shown < maxCharacters else { break }
            shown += 1
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.properties.generalCategory == .format {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        let total = text.unicodeScalars.count
        return total > maxCharacters ? out + "…\" (\(total) characters)" : out + "\""
    }
}
