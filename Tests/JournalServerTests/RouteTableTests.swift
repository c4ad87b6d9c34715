import Foundation
import Testing
@testable import JournalServer

/// The 405 middleware keeps its own table of the API's paths and methods (Hummingbird does not
/// expose its router's): this walks `Spec/openapi.yaml` and checks the table says the same, so a
/// route added to the contract and the router but not the table fails here, not in production.
@Suite struct RouteTableTests {
    /// Each path of the document (templated segments as `:`) with its methods, upper case.
    static func documentedRoutes() throws -> [String: Set<String>] {
        let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Spec/openapi.yaml")
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        var routes: [String: Set<String>] = [:]
        var path: String? = nil
        var inPaths = false
        for line in try String(contentsOf: spec, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /") && line.hasSuffix(":") {
                let segments = line.dropFirst(2).dropLast().split(separator: "/").map { $0.hasPrefix("{") ? ":" : String($0) }
                path = segments.joined(separator: "/")
                routes[path!] = []
            } else if let p = path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"),
                      case let name = String(line.dropFirst(4).dropLast()), methods.contains(name) {
                routes[p]!.insert(name.uppercased())
            }
        }
        return routes
    }

    @Test func theMethodTableMatchesTheOpenAPIDocument() throws {
        let documented = try Self.documentedRoutes()
        #expect(documented.count >= 12, "the document's paths were not found")
        var table: [String: Set<String>] = [:]
        for (segments, methods) in MethodNotAllowedMiddleware.routes {
            table[segments.joined(separator: "/")] = Set(methods.map(\.rawValue))
        }
        #expect(table == documented)
    }
}
