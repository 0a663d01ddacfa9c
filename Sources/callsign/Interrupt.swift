import ArgumentParser
import Callsign
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command's work; an ``APIError`` becomes one line on stderr and its exit status
/// (see ``ExitStatus``). Ctrl-C cancels the work — the call in flight ends as cancelled, a
/// HAR file or download is closed properly — and the command exits 130; a second Ctrl-C
/// exits at once.
///
/// - Parameter interruptIsTheEnd: `true` for a command that runs until Ctrl-C (`callsign queue
///   watch`): Ctrl-C is then how it ends, with status 0 and no message.
func reportingErrors(interruptIsTheEnd: Bool = false, _ body: @escaping @Sendable () async throws -> Void) async throws {
    // Ctrl-C is caught before the work starts: one pressed while the work is starting cancels it
    // (it neither ends the process with the default action nor is lost).
    let interrupt = await Interrupt()
    defer { interrupt.stop() }
    let work = Task { try await body() }
    interrupt.cancels(work)
    do {
        try await work.value
    } catch {
        // Whatever the cancelled work threw, Ctrl-C is what happened.
        if interrupt.happened {
            if interruptIsTheEnd { return }
            Terminal.error(localized("callsign: interrupted"))
            throw ExitCode(130)
        }
        guard let error = error as? APIError else {
            // ArgumentParser prints a usage error as it is: one that quotes outside text (a file's
            // contents, a variable's value) is made safe for the terminal first.
            if let usage = error as? ValidationError { throw ValidationError(TerminalText.line(usage.message)) }
            throw error
        }
        Terminal.error("callsign: \(error.description)")
        throw ExitCode(ExitStatus.code(for: error))
    }
}

/// Turns SIGINT into cancelling a task while it runs.
final class Interrupt {
    private let source: any DispatchSourceSignal
    private let state = Seen()

    /// Whether Ctrl-C was pressed and the task it cancels, shared with the signal handler.
    private final class Seen: Sendable {
        struct State {
            var pressed = false
            var task: Task<Void, any Error>?
        }
        let state = Mutex(State())
    }

    /// Catches SIGINT from now on; returns once the signal source is registered with the
    /// system, so no Ctrl-C after this point ends the process or goes unseen.
    init() async {
        signal(SIGINT, SIG_IGN)  // delivered to the source below instead of ending the process
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [state] in
            let (again, task) = state.state.withLock { state in
                defer { state.pressed = true }
                return (state.pressed, state.task)
            }
            if again { exit(130) }
            task?.cancel()
        }
        // The source is registered on Dispatch's own queue after `resume()`: a signal before
        // that would be ignored without being seen.
        await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
            source.setRegistrationHandler { registered.resume() }
            source.resume()
        }
    }

    /// Cancels `task` on Ctrl-C — at once if Ctrl-C was already pressed.
    func cancels(_ task: Task<Void, any Error>) {
        let pressed = state.state.withLock { state in
            state.task = task
            return state.pressed
        }
        if pressed { task.cancel() }
    }

    /// Whether Ctrl-C was pressed.
    var happened: Bool { state.state.withLock { $0.pressed } }

    func stop() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
