import Testing
@testable import ListModel
