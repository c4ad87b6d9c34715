import Foundation
import Testing

/// `jlog accounts add` as an operator types it, in the directory of the store it names.
@Suite struct JlogAccountsCommandTests {
    /// A store named by a one-character relative path that does not exist yet is made, with the
    /// account's first credential (Foundation's `deletingLastPathComponent` trapped on such a path).
    @Test(arguments: ["s", "./s", "ab"])
    func addingAnAccountMakesAStoreAtAnyRelativePath(_ store: String) throws {
        let dir = try JlogCommandTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try JlogCommandTests.jlog)
        p.arguments = ["accounts", "add", store, "alice"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "jlog accounts add \(store) alice ended with \(p.terminationStatus)")
        #expect(printed.hasPrefix("jlc1.alice."), "\(printed)")
        #expect(FileManager.default.fileExists(atPath: dir + "/" + store + "/service/accounts"))
    }
}
