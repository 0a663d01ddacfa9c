import Testing

/// Ten minutes: far beyond what any test takes on a quiet machine, and beyond what it takes on a
/// busy one — where a test may wait for the CPU, for one of the suite's process slots
/// (``ProcessSlots``) or for a server starved by its neighbours.
private let hangGuardLimit: TimeLimitTrait = .timeLimit(.minutes(10))

extension Trait where Self == TimeLimitTrait {
    /// The one time limit a suite carries: a guard against a hang, never a measure of speed. A
    /// test that asserts time does it by the order of events or with a generous bound of its own.
    static var hangGuard: Self { hangGuardLimit }
}
