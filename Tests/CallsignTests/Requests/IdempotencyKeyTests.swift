@testable import Callsign
import Foundation
import Testing

/// The `Idempotency-Key`s the retry and offline stages add: random version 4 UUIDs from the
/// system's secure generator.
@Suite("Idempotency keys", .hangGuard)
struct IdempotencyKeyTests {
    @Test("a new key is a version 4 UUID in its usual text, and 10,000 keys are all different")
    func keys() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let key = Request.newIdempotencyKey()
            let characters = Array(key)
            #expect(key.count == 36 && UUID(uuidString: key)?.uuidString == key, "\(key)")
            #expect(characters[14] == "4", "\(key)")
            #expect("89AB".contains(characters[19]), "\(key)")
            seen.insert(key)
        }
        #expect(seen.count == 10_000)
    }

    @Test("a key is added only where there is none, and stays the same once added")
    func addedOnce() {
        var request = Request.post("orders")
        request.addIdempotencyKeyIfMissing()
        let first = request.headers["Idempotency-Key"]
        request.addIdempotencyKeyIfMissing()
        #expect(first != nil && request.headers["Idempotency-Key"] == first)
        var own = Request.post("orders")
        own.headers["idempotency-key"] = "mine"
        own.addIdempotencyKeyIfMissing()
        #expect(own.headers.values(for: "Idempotency-Key") == ["mine"])
    }
}
