public import Foundation

/// What a conformance suite throws when a storage does not keep the contract it checks.
///
/// The suites (``CacheStorageConformance``, ``QueueStorageConformance``,
/// ``TransportConformance``) report each broken promise as a thrown error that names the suite,
/// the check and what was seen, so they work
/// from Swift Testing, XCTest or a plain executable alike: CallsignTesting links neither test
/// framework.
///
/// ```swift
/// do {
///     try await CacheStorageConformance { MyCacheStorage() }.run(.roundTrip)
/// } catch let failure as ConformanceFailure {
///     print(failure.check, failure.detail)
/// }
/// ```
public struct ConformanceFailure: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The suite that failed (`"CacheStorageConformance"`).
    public let suite: String
    /// The check that failed, as its suite names it (the `Check`'s description).
    public let check: String
    /// What the check expected and what the storage did instead.
    public let detail: String

    /// Creates a failure; the suites make these.
    public init(suite: String, check: String, detail: String) {
        self.suite = suite
        self.check = check
        self.detail = detail
    }

    /// `suite › check: detail`, for a test report.
    public var description: String { "\(suite) › \(check): \(detail)" }

    /// The same text as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

/// Every failure of one run of a suite, from ``CacheStorageConformance/run()``,
/// ``QueueStorageConformance/run()`` or ``TransportConformance/run()``: all checks run, so one
/// report names every broken promise.
///
/// ```swift
/// do {
///     try await QueueStorageConformance { MyQueueStorage() }.run()
/// } catch let report as ConformanceFailures {
///     for failure in report.failures { print(failure) }
/// }
/// ```
public struct ConformanceFailures: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The failures, in the order the checks ran; never empty.
    public let failures: [ConformanceFailure]

    /// Creates the report of a run; the suites make these.
    public init(_ failures: [ConformanceFailure]) {
        self.failures = failures
    }

    /// One failure a line.
    public var description: String { failures.map(\.description).joined(separator: "\n") }

    /// The same text as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

/// The expectation helper the suites share: throws a ``ConformanceFailure`` naming the check.
struct ConformanceExpectation: Sendable {
    let suite: String
    let check: String

    func require(_ condition: Bool, _ detail: @autoclosure () -> String) throws(ConformanceFailure) {
        guard condition else { throw ConformanceFailure(suite: suite, check: check, detail: detail()) }
    }

    func require<T>(_ value: T?, _ detail: @autoclosure () -> String) throws(ConformanceFailure) -> T {
        guard let value else { throw ConformanceFailure(suite: suite, check: check, detail: detail()) }
        return value
    }

    /// Runs a storage call, turning what it throws into a failure of this check.
    func call<T>(_ what: String, _ body: () async throws -> T) async throws(ConformanceFailure) -> T {
        do {
            return try await body()
        } catch {
            throw ConformanceFailure(suite: suite, check: check, detail: "\(what) threw \(error)")
        }
    }
}

/// A suite of checks shipped for code written outside the package — ``CacheStorageConformance``,
/// ``QueueStorageConformance``, ``TransportConformance``: ``run()`` runs every check and reports
/// every failure, ``run(_:)`` one check.
///
/// ```swift
/// try await QueueStorageConformance { try MyQueueStorage(path: freshPath()) }.run()
/// ```
public protocol ConformanceSuite: Sendable {
    /// The suite's checks, each a promise of the contract it holds code to.
    associatedtype Check: CaseIterable & Sendable & CustomStringConvertible
    /// Runs one check, and throws a ``ConformanceFailure`` naming it when it fails.
    func run(_ check: Check) async throws
}

extension ConformanceSuite {
    /// Runs every check, and throws ``ConformanceFailures`` naming each that failed (all of them,
    /// not only the first).
    public func run() async throws {
        var failures: [ConformanceFailure] = []
        for check in Check.allCases {
            do {
                try await run(check)
            } catch let failure as ConformanceFailure {
                failures.append(failure)
            } catch {
                failures.append(ConformanceFailure(suite: String(describing: Self.self), check: check.description, detail: "threw \(error)"))
            }
        }
        guard failures.isEmpty else { throw ConformanceFailures(failures) }
    }
}
