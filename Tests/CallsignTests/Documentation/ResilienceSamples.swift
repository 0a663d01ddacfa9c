import Callsign
import Foundation

// Every ```swift block of Resilience.md, compiled in the context it needs. ArticleSamplesTests
// checks that each block appears here line for line: change the article and this file together.

enum ResilienceSamples {
    private static func show(_ text: String) {}

    static func rateLimits(apiBaseURL: URL) {
        let client = APIClient(configuration: .init {
            $0.rateLimits = RateLimits()   // follow what servers announce, one gate per origin
        })
        _ = client

        var configuration = APIClient.Configuration()
        configuration.rateLimits = RateLimits(perOrigin: .perSecond(5))
        configuration.rateLimits = RateLimits(perTag: ["search": .per(10, .seconds(10))])

        let limits = RateLimits()
        if let reopens = limits.closedUntil(apiBaseURL), reopens > .now {
            show("Try again in \(reopens - .now)")
        }
    }

    static func circuitBreaker() {
        let breaker = CircuitBreaker(consecutiveFailures: 5, coolDown: .seconds(30))
        let client = APIClient(configuration: .init { $0.circuitBreaker = breaker })
        _ = client

        Task {
            for await change in breaker.transitions where change.to != .halfOpen {
                show(change.to == .open ? "Service unavailable" : "Back online")
            }
        }
    }

    struct ValidationFailure: Decodable, Sendable {
        let message: String
    }

    static func problemDetails(client: APIClient) async {
        do {
            _ = try await client.post("users").parameters(["name": "ada"]).send().validate()
        } catch {
            if let problem = error.problem {
                show("\(problem.title ?? "Failed"): \(problem.detail ?? "")")
                let fields = problem.extensions["errors"]   // the API's own members, as JSONValue
                _ = fields
            }
        }
    }

    static func errorClasses(client: APIClient) async {
        var configuration = APIClient.Configuration()
        configuration.responses.classes.register(ValidationFailure.self)
        let createUser = APIDefinition(path: "users", method: .post, errorClasses: ErrorClasses([
            .init(statuses: [422], className: "ValidationFailure"),
            .init(statuses: StatusCodes(ranges: [500...599]), className: "ProblemDetails"),
        ]))
        _ = (configuration, createUser)

        do {
            _ = try await client.call("CreateUser", parameters: ["name": ""])
        } catch {
            if let failure = error.serverError as? ValidationFailure { show(failure.message) }
            let same = error.serverError(as: ValidationFailure.self)   // or name the type where you catch
            _ = same
        }
    }

    struct User: Decodable, Sendable {
        let name: String
    }

    static func pages(client: APIClient) async throws {
        for try await page in client.pages(.get("users"), pagination: Pagination.link.limited(to: 5)) {
            show("\(try page.decode([User].self).count) users")
        }
        for try await user in try client.items("ListUsers", as: User.self, at: "data",
                                               pagination: .cursor(at: "meta.next_cursor", parameter: "cursor")) {
            show(user.name)
        }
    }
}
