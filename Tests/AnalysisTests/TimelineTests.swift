import Analysis
import XCTest

final class TimelineTests: XCTestCase {
    func testRulesHaveUniqueIDs() {
        let ids = Diagnoses.rules.map(\.id)
        XCTAssertEqual(Set(ids).count, ids.count)
    }
}
