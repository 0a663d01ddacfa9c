import Callsign
import CallsignOpenAPI
import Foundation

// The ```swift blocks about declared pagination — Definitions.md's "Pagination" and OpenAPI.md's
// "Paged operations" — compiled in the context they need. ArticleSamplesTests checks that each
// block appears here line for line: change the articles and this file together.

enum PaginationSamples {
    private static func show(_ text: String) {}

    struct Repo: Decodable, Sendable {
        let name: String
    }

    struct Book: Decodable, Sendable {
        let title: String
    }

    static func declaredInCode(client: APIClient) async throws {
        var repos = APIDefinition(name: "ListRepos", path: "repos")
        repos.pagination = .page(items: "data", limitParameter: "per_page", pageSize: 50)
        for try await repo in try client.items("ListRepos", as: Repo.self) {
            show(repo.name)
        }
    }

    static func fromOpenAPI() async throws {
        let api = try OpenAPIOperations(contentsOf: URL(fileURLWithPath: "books.yaml"))
        let client = APIClient(definitions: api.definitions)
        for try await book in try client.items("listBooks", as: Book.self, at: "books") {
            print(book.title)
        }
        let shelves = try api.request("listShelves", parameters: ["limit": 50])
        for try await page in client.pages(shelves) {
            print(page.status)
        }
    }
}
