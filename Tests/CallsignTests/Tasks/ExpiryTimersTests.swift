@testable import Callsign
import Foundation
import Testing

/// The one table of timers every deadline, attempt limit and idle limit races against. Each test
/// has its own table, so the suite's other calls never share its driver. Times are real (the
/// timers race real I/O): every assertion on time is a lower bound (never before its limit) or
/// the order of events, never a measure of speed.
@Suite("Expiry timers", .hangGuard)
struct ExpiryTimersTests {
    /// How a wait ended.
    enum Ending: Equatable {
        case expired, idle(Duration), cancelled, other(String)
    }

    static func ending(of wait: () async throws -> Void) async -> Ending {
        do {
            try await wait()
            return .other("returned")
        } catch is Deadline.Expired {
            return .expired
        } catch let idle as Deadline.Idle {
            return .idle(idle.limit)
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .other("\(error)")
        }
    }

    /// Waits until the table holds `count` waits (each is added as its task first runs). Only
    /// for waits that cannot end by themselves meanwhile (an hour's limit, or none): one that
    /// could would be gone again before a starved test looks.
    static func untilWaiting(_ count: Int, in timers: ExpiryTimers) async {
        while timers.pending.waits != count, !Task.isCancelled { await Task.yield() }
    }

    @Test("a wait due before the driver's wake-up re-arms it: it ends at its own limit, not the later one's")
    func earlierWaitRearms() async {
        let timers = ExpiryTimers()
        let late = Task { await Self.ending { try await timers.wait(until: .now + .seconds(3600), idle: nil) } }
        await Self.untilWaiting(1, in: timers)
        let lateWake = timers.pending.wake
        #expect(lateWake != nil)

        let end = ContinuousClock.now + .milliseconds(100)
        let early = await Self.ending { try await timers.wait(until: end, idle: nil) }
        #expect(early == .expired)
        #expect(ContinuousClock.now >= end)
        // The late wait is still there, and the driver sleeps until it again.
        #expect(timers.pending.waits == 1)
        #expect(timers.pending.wake == lateWake)

        late.cancel()
        #expect(await late.value == .cancelled)
        #expect(timers.pending.waits == 0)
    }

    @Test("waits with many limits each end once their own limit has passed, none before it, and leave no entry")
    func manyLimits() async {
        let timers = ExpiryTimers()
        let start = ContinuousClock.now
        let results = await withTaskGroup(of: (Duration, Ending, ContinuousClock.Instant).self) { group in
            for index in 0..<200 {
                // Deliberately out of order: later waits are often due earlier.
                let limit = Duration.milliseconds((index * 37) % 300)
                group.addTask {
                    let ending = await Self.ending { try await timers.wait(until: start + limit, idle: nil) }
                    return (limit, ending, .now)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 200)
        for (limit, ending, endedAt) in results {
            #expect(ending == .expired)
            #expect(endedAt >= start + limit)
        }
        #expect(timers.pending.waits == 0)
        #expect(timers.pending.wake == nil)
    }

    @Test("a wait cancelled before it starts, or at any moment while it waits, ends as cancelled and leaves no entry")
    func cancelled() async {
        let timers = ExpiryTimers()
        let before = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Self.ending { try await timers.wait(until: .now + .seconds(3600), idle: nil) }
        }
        #expect(await before.value == .cancelled)

        let waits = (0..<300).map { _ in
            Task { await Self.ending { try await timers.wait(until: .now + .seconds(3600), idle: nil) } }
        }
        for (index, wait) in waits.enumerated() {
            // Some are cancelled before their task runs, some once they wait.
            if index % 3 == 0 { await Task.yield() }
            wait.cancel()
        }
        for wait in waits { #expect(await wait.value == .cancelled) }
        #expect(timers.pending.waits == 0)
    }

    @Test("an idle watch's touch moves its wait's end later, and the wait ends with the idle limit once bytes stop")
    func idle() async {
        let timers = ExpiryTimers()
        let watch = IdleWatch(limit: .milliseconds(200))
        let waiting = Task { await Self.ending { try await timers.wait(until: .now + .seconds(3600), idle: watch) } }
        // Not `untilWaiting`: on a starved machine this wait may be added and ended before a look.
        try? await Task.sleep(for: .milliseconds(100))
        let beforeTouch = ContinuousClock.now
        watch.touch()
        // On a machine stalled past the limit the wait may already have ended (or not yet have
        // started): only a wait under way after the touch must end at least a limit after it.
        let waitingAfterTouch = timers.pending.waits == 1
        let ending = await waiting.value
        let endedAt = ContinuousClock.now
        #expect(ending == .idle(.milliseconds(200)))
        if waitingAfterTouch { #expect(endedAt >= beforeTouch + .milliseconds(200)) }
        #expect(timers.pending.waits == 0)
    }

    @Test("the end comes before an idle limit that has passed too, and a limit already passed ends the wait at once")
    func endFirst() async {
        let timers = ExpiryTimers()
        let watch = IdleWatch(limit: .zero)
        #expect(await Self.ending { try await timers.wait(until: .now - .seconds(1), idle: watch) } == .expired)
        #expect(await Self.ending { try await timers.wait(until: nil, idle: watch) } == .idle(.zero))
        #expect(timers.pending.waits == 0)
        // A wait with no limit at all ends only when cancelled (and keeps no driver spinning).
        let unbounded = Task { await Self.ending { try await timers.wait(until: nil, idle: nil) } }
        await Self.untilWaiting(1, in: timers)
        #expect(timers.pending.wake.map { $0 > .now + .seconds(3600) } == true)
        unbounded.cancel()
        #expect(await unbounded.value == .cancelled)
    }

    @Test("the system clock's sleep waits at least its duration, ends as cancelled when cancelled, and takes any duration without trapping")
    func systemClockSleep() async throws {
        let clock = SystemClock()
        let start = ContinuousClock.now
        try await clock.sleep(for: .milliseconds(50))
        #expect(ContinuousClock.now >= start + .milliseconds(50))
        try await clock.sleep(for: .zero)
        try await clock.sleep(for: .milliseconds(-5))

        for duration in [Duration.seconds(3600), .seconds(Int64.max)] {
            let sleeping = Task { await Self.ending { try await clock.sleep(for: duration) } }
            sleeping.cancel()
            #expect(await sleeping.value == .cancelled)
        }
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Self.ending { try await clock.sleep(for: .zero) }
        }
        #expect(await cancelledFirst.value == .cancelled)
    }

    @Test("a race's work that comes back once its end has passed is late: Expired, whichever side ran first; in time, its value")
    func lateWorkIsExpired() async throws {
        // The work returns at its first turn, before the timer's side can take the three turns
        // it needs (its wait filed, the driver woken, the wait resumed): only the check of the
        // end after the race can make this late result an expiry.
        for _ in 0..<20 {
            let late = await Self.ending { _ = try await Deadline.run(until: .now - .milliseconds(1), idle: nil) { 42 } }
            #expect(late == .expired)
        }
        let inTime = try await Deadline.run(until: .now + .seconds(3_600), idle: nil) { 42 }
        #expect(inTime == 42)
    }

    @Test("a scheduled callback is called once its instant has passed, and one cancelled first never is")
    func scheduled() async {
        let timers = ExpiryTimers()
        let (calls, sink) = AsyncStream.makeStream(of: (String, ContinuousClock.Instant).self)
        let kept = ContinuousClock.now + .milliseconds(60)
        _ = timers.schedule(at: kept) { sink.yield(("kept", .now)) }
        // Due before the kept one: had it stayed, it would have been called first.
        let cancelled = timers.schedule(at: .now + .milliseconds(10)) { sink.yield(("cancelled", .now)) }
        cancelled.cancel()
        var iterator = calls.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.0 == "kept")
        #expect(first.map { $0.1 >= kept } == true)
        #expect(timers.pending.waits == 0)
    }
}
