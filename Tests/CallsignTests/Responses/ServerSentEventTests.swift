import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// The events a parser reads from `text`, fed in pieces of `piece` bytes.
private func parsed(_ text: String, piece: Int = .max, limits: Limits = .default) throws -> (events: [ServerSentEvent], parser: ServerSentEvent.Parser) {
    var parser = ServerSentEvent.Parser(limits: limits)
    var events: [ServerSentEvent] = []
    let bytes = Array(text.utf8)
    var start = 0
    while start < bytes.count {
        let end = min(bytes.count, start + max(1, min(piece, bytes.count)))
        events += try parser.feed(bytes[start..<end])
        start = end
    }
    return (events, parser)
}

@Suite("Server-sent events: the WHATWG grammar, bounded, and a stream that reconnects", .hangGuard)
struct ServerSentEventTests {
    @Test("data, event, id and retry fields; comments; one space after the colon removed; a field without a colon")
    func grammar() throws {
        let text = """
            : a comment
            data: first
            data:  two spaces, one kept

            event: price
            data:{"p":1}
            id: 7

            data

            id
            retry: 2500
            nonsense: ignored

            data: after an empty id

            """
        let (events, parser) = try parsed(text + "\n")
        #expect(events == [
            ServerSentEvent(data: "first\n two spaces, one kept"),
            ServerSentEvent(type: "price", data: "{\"p\":1}", id: "7"),
            ServerSentEvent(data: "", id: "7"),
            ServerSentEvent(data: "after an empty id"),
        ])
        #expect(parser.retry == .milliseconds(2500))
        #expect(parser.lastEventID == nil)
    }

    @Test("CR, LF and CRLF end lines, also when a CRLF is split between chunks; a byte-order mark at the start is dropped")
    func lineEnds() throws {
        let text = "\u{FEFF}data: a\r\rdata: b\r\n\r\ndata: c\n\nid: x\u{0}y\ndata: d\n\n"
        for piece in [1, 2, 3, 5, .max] {
            let (events, _) = try parsed(text, piece: piece)
            #expect(events.map(\.data) == ["a", "b", "c", "d"], "pieces of \(piece)")
            #expect(events.allSatisfy { $0.id == nil }, "an id with NUL is ignored")
        }
        // Only one mark, and only at the start.
        let (kept, _) = try parsed("\u{FEFF}\u{FEFF}data: a\n\n")
        #expect(kept.isEmpty, "a second mark makes the first line's name \\u{FEFF}data, not data")
    }

    @Test("an event without a closing blank line is dropped at the end; an id without data still counts")
    func endOfStream() throws {
        var (events, parser) = try parsed("id: 3\n\ndata: partial")
        #expect(events.isEmpty)
        #expect(parser.lastEventID == "3")
        parser.finish()
        #expect(try parser.feed(Array("\n\n".utf8)).isEmpty, "the partial event is gone after finish()")
    }

    @Test("retry takes digits only, saturating at a day; a line or an event past the limit is responseTooLarge")
    func bounds() throws {
        #expect(try parsed("retry: 99999999999999999999999\n").parser.retry == .seconds(86_400))
        #expect(try parsed("retry: 1.5\nretry: -1\nretry: 12a\n").parser.retry == nil)
        let small = Limits { $0.maximumEventSize = 64 }
        for text in [String(repeating: "x", count: 65), String(repeating: "data: 0123456789\n", count: 7)] {
            #expect(throws: APIError.self) { try parsed(text, piece: 7, limits: small) }
            do {
                _ = try parsed(text, piece: 7, limits: small)
            } catch let error as APIError {
                #expect(error.code == .responseTooLarge && error.message.contains("64 bytes"), "\(error)")
            }
        }
        #expect(try parsed(String(repeating: "data: 01234\n", count: 5) + "\n", limits: small).events.count == 1)
    }

    @Test("an id that could not be a Last-Event-ID header (a control character, a space at either end, past 1 KiB) is ignored and the last good one kept")
    func unsendableIDs() throws {
        let longest = String(repeating: "x", count: ServerSentEvent.Parser.maximumIDSize)
        let text = [
            "id: 1\ndata: a", "id: a\u{1}b\ndata: b", "id: a\u{7F}\ndata: c", "id:  lead\ndata: d", "id: trail \ndata: e",
            "id: \(longest)x\ndata: f", "id: \(longest)\ndata: g", "id: a\tb\ndata: h", "id: caf\u{E9}\ndata: i",
        ].joined(separator: "\n\n") + "\n\n"
        for piece in [1, 7, .max] {
            let (events, parser) = try parsed(text, piece: piece)
            #expect(events.map(\.data) == ["a", "b", "c", "d", "e", "f", "g", "h", "i"], "pieces of \(piece)")
            #expect(events.map(\.id) == ["1", "1", "1", "1", "1", "1", longest, "a\tb", "caf\u{E9}"], "pieces of \(piece)")
            #expect(parser.lastEventID == "caf\u{E9}")
        }
        // An ignored id leaves an earlier one of the same event in force; an empty one still clears it.
        let (events, parser) = try parsed("id: 5\nid: \u{0}\ndata: a\n\nid\nid: \u{1B}[31m\ndata: b\n\n")
        #expect(events.map(\.id) == ["5", nil])
        #expect(parser.lastEventID == nil)
        // Bytes that are not UTF-8 are read as U+FFFD, three bytes each: the bound holds after that.
        var raw = ServerSentEvent.Parser()
        let invalid = Array("id: ".utf8) + Array(repeating: 0xFF, count: 400) + Array("\ndata: x\n\nid: \u{FF}\ndata: y\n\n".utf8)
        #expect(try raw.feed(invalid).map(\.id) == [nil, "\u{FF}"])
    }

    @Test("an event's data decodes as JSON, bounded by the nesting depth")
    func decoding() throws {
        struct Price: Decodable, Equatable { let p: Int }
        #expect(try ServerSentEvent(data: "{\"p\":1}").decode(Price.self) == Price(p: 1))
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: APIError.self) { try ServerSentEvent(data: deep).decode([JSONValue].self) }
        #expect(throws: APIError.self) { try ServerSentEvent(data: "not json").decode(Price.self) }
    }

    @Test("a stream cut mid-event reconnects after the server's retry with Last-Event-ID, delivers every event once, and a 204 ends it", arguments: TransportKind.allCases)
    func reconnects(kind: TransportKind) async throws {
        let clock = TestClock()
        let path = "/events/\(UUID().uuidString)"
        try await withServer(transport: kind, configure: { $0.clock = clock }) { server, client in
            server.route(path) { request in
                // Each connection lasts a minute on the client's clock, as a live stream does.
                clock.advance(by: .seconds(60))
                switch request.header("Last-Event-ID") {
                case nil:
                    let body = "retry: 1500\nid: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\n"
                    let cut = body.utf8.count - "ta: c\n\n".utf8.count
                    return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(body.utf8)))
                        .with(.truncate(afterBodyBytes: cut))
                case "2"?:
                    return ServerResponse(
                        status: 200, headers: [("Content-Type", "text/event-stream; charset=utf-8")],
                        body: .data(Data("id: 3\ndata: c\n\nid: 4\ndata: d\n\n".utf8)))
                default:
                    return ServerResponse(status: 204)
                }
            }
            var received: [ServerSentEvent] = []
            for try await event in client.events(.get(path)) { received.append(event) }
            #expect(received.map(\.data) == ["a", "b", "c", "d"])
            #expect(received.map(\.id) == ["1", "2", "3", "4"])
            let asked = server.requests.filter { $0.rawPath == path }
            #expect(asked.map { $0.header("Last-Event-ID") } == [nil, "2", "4"])
            #expect(asked.allSatisfy { $0.header("Accept") == "text/event-stream" })
            #expect(clock.sleeps == [.milliseconds(1500), .milliseconds(1500)], "the server's retry: delay, not the default 3 s")
        }
    }

    @Test("a POST's stream ends with the server's; reconnections are counted and end with the last failure")
    func endsAndLimits() async throws {
        let clock = TestClock()
        let path = "/events/\(UUID().uuidString)"
        try await withServer(configure: {
            $0.clock = clock
            $0.retry.jitter = .none
        }) { server, client in
            server.route(path) { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("data: once\n\n".utf8)))
            }
            var posted: [String] = []
            for try await event in client.events(.post(path)) { posted.append(event.data) }
            #expect(posted == ["once"])
            #expect(server.hits(path) == 1, "a POST is not sent again")
            #expect(clock.sleeps.isEmpty)

            // A GET whose server keeps ending the stream at once, with no event: two reconnections, then the end.
            let empty = "/events/\(UUID().uuidString)"
            server.route(empty) { _ in ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(": nothing\n".utf8))) }
            var none = 0
            for try await _ in client.events(.get(empty), reconnecting: .upTo(2, after: .seconds(1))) { none += 1 }
            #expect(none == 0)
            #expect(server.hits(empty) == 3)
            #expect(clock.sleeps == [.seconds(1), .seconds(2)], "the second quick end in a row doubles the wait")
        }
    }

    @Test("a stream whose id holds a control character goes on, and the reconnection sends the last good Last-Event-ID", arguments: TransportKind.allCases)
    func unsendableIDGoesOn(kind: TransportKind) async throws {
        let clock = TestClock()
        let path = "/events/\(UUID().uuidString)"
        try await withServer(transport: kind, configure: { $0.clock = clock }) { server, client in
            server.route(path) { request in
                switch request.header("Last-Event-ID") {
                case nil:
                    let body = "id: 1\ndata: a\n\nid: a\u{1}b\ndata: b\n\n"
                    return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(body.utf8)))
                case "1"?:
                    let body = "id: 2\u{0}\ndata: c\n\nid: 2\ndata: d\n\nid: 3\u{7F}\ndata: e\n\n"
                    return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(body.utf8)))
                case "2"?:
                    return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("id: caf\u{E9}\ndata: f\n\n".utf8)))
                default:
                    return ServerResponse(status: 204)
                }
            }
            var received: [ServerSentEvent] = []
            for try await event in client.events(.get(path)) { received.append(event) }
            #expect(received.map(\.data) == ["a", "b", "c", "d", "e", "f"])
            #expect(received.map(\.id) == ["1", "1", "1", "2", "2", "caf\u{E9}"])
            let asked = server.requests.filter { $0.rawPath == path }
            #expect(asked.map { $0.header("Last-Event-ID") } == [nil, "1", "2", "caf\u{E9}"], "every reconnection was sent, with the last good id")
        }
    }

    @Test("retry: 0 with one event per connection: waits of at least 500 ms that double while connections end quickly, up to 30 s", arguments: TransportKind.allCases)
    func reconnectStorm(kind: TransportKind) async throws {
        let clock = TestClock()
        let path = "/events/\(UUID().uuidString)"
        try await withServer(transport: kind, configure: {
            $0.clock = clock
            $0.retry.jitter = .none
        }) { server, client in
            server.route(path) { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("retry: 0\ndata: tick\n\n".utf8)))
            }
            // Ten minutes of the client's clock: at 500 connections a second this was 300,000.
            let start = clock.now
            var events = 0
            for try await _ in client.events(.get(path)) {
                events += 1
                if clock.now - start >= .seconds(600) { break }
            }
            let waits = clock.sleeps
            #expect(Array(waits.prefix(8)) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30)])
            #expect(waits.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(30) })
            #expect(server.hits(path) == events)
            #expect(server.hits(path) <= 26, "\(server.hits(path)) connections in ten minutes")
        }
    }

    @Test("with the retry policy's jitter, a reconnection storm's waits stay between the server's delay (raised to 500 ms) and 30 s")
    func reconnectStormJitter() async throws {
        let clock = TestClock()
        let path = "/events/\(UUID().uuidString)"
        try await withServer(configure: {
            $0.clock = clock
            $0.retry.jitter = .full
        }) { server, client in
            server.route(path) { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("retry: 0\ndata: tick\n\n".utf8)))
            }
            let start = clock.now
            for try await _ in client.events(.get(path)) where clock.now - start >= .seconds(600) { break }
            let waits = clock.sleeps
            #expect(waits.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(30) }, "\(waits)")
            #expect(waits.count < 150, "\(waits.count) reconnections in ten minutes")
        }
    }

    @Test("a healthy stream whose connections last minutes reconnects after exactly the server's delay every time", arguments: TransportKind.allCases)
    func healthyStreamUnaffected(kind: TransportKind) async throws {
        let clock = TestClock()
        let path = "/events/\(UUID().uuidString)"
        try await withServer(transport: kind, configure: {
            $0.clock = clock
            $0.retry.jitter = .none
        }) { server, client in
            server.route(path) { request in
                let last = request.header("Last-Event-ID").flatMap { Int($0) } ?? 0
                guard last < 6 else { return ServerResponse(status: 204) }
                // A connection a proxy cuts after five minutes on the client's clock.
                clock.advance(by: .seconds(300))
                let body = (last == 2 ? "retry: 1000\n" : "") + "id: \(last + 1)\ndata: \(last + 1)\n\n"
                return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(body.utf8)))
            }
            var received: [String] = []
            for try await event in client.events(.get(path)) { received.append(event.data) }
            #expect(received == ["1", "2", "3", "4", "5", "6"])
            #expect(clock.sleeps == [.seconds(3), .seconds(3), .seconds(1), .seconds(1), .seconds(1), .seconds(1)])
            #expect(server.hits(path) == 7)
        }
    }

    @Test("an answer that is not an event stream, a refused status, an event too large and a deadline before the reconnection are clear errors")
    func failures() async throws {
        let clock = TestClock()
        try await withServer(configure: {
            $0.clock = clock
            $0.limits.maximumEventSize = 32
        }) { server, client in
            server.route("/events/json") { _ in .json(["a": 1]) }
            server.route("/events/missing") { _ in ServerResponse(status: 404) }
            server.route("/events/large") { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(("data: " + String(repeating: "x", count: 100) + "\n\n").utf8)))
            }
            server.route("/events/slow") { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("retry: 60000\ndata: one\n\n".utf8)))
            }
            func failure(_ request: Request) async -> APIError? {
                await apiError { for try await _ in client.events(request) {} }
            }
            #expect(await failure(.get("/events/json"))?.code == .unacceptableContentType)
            #expect(await failure(.get("/events/missing"))?.code == .unacceptableStatus)
            #expect(await failure(.get("/events/large"))?.code == .responseTooLarge)
            var slow = Request.get("/events/slow")
            slow.deadline = .seconds(30)
            let late = await failure(slow)
            #expect(late?.code == .timedOut, "\(String(describing: late))")
            #expect(server.hits("/events/slow") == 1, "no reconnection past the deadline")
        }
    }

    @Test("a stream's body gets the time the client's clock says is left, however far that clock is from the real one", arguments: TransportKind.allCases)
    func deadlineOnTheClientsClock(kind: TransportKind) async throws {
        // A clock an hour behind the real one, as an injected clock is once real time has passed:
        // the deadline is an instant of this clock, and the body's timer must not read it as a real one.
        struct BehindClock: CallClock {
            let now = ContinuousClock.now - .seconds(3600)
            func sleep(for duration: Duration) async throws {}
        }
        try await withServer(transport: kind, configure: { $0.clock = BehindClock() }) { server, client in
            server.route("/events/once") { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("data: one\n\n".utf8)))
            }
            var request = Request.get("/events/once")
            // Generous (a busy full run took over 30 s): a timer that read this clock's instant
            // as a real one would fire at once, an hour late.
            request.deadline = .seconds(120)
            var received: [String] = []
            for try await event in client.events(request, reconnecting: .never) { received.append(event.data) }
            #expect(received == ["one"])
            #expect(server.hits("/events/once") == 1)
        }
    }

    @Test("events are delivered as they arrive, not when the stream ends; leaving the loop ends the stream", arguments: TransportKind.allCases)
    func incremental(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            server.route("/events/drip") { _ in
                // One event now, the next a minute later: the first must not wait for it.
                ServerResponse(
                    status: 200, headers: [("Content-Type", "text/event-stream")],
                    body: .data(Data("data: now\n\ndata: later\n\n".utf8)), behaviour: .drip(chunk: 11, every: .seconds(60)))
            }
            var first: String?
            for try await event in client.events(.get("/events/drip")) {
                first = event.data
                break
            }
            #expect(first == "now")
        }
    }
}
