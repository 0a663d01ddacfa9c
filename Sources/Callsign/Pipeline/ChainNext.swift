/// One seam of the pipeline — what its stages are, what they take and what they give back.
/// There are two: ``RequestSeam`` (``Middleware``s on ``Request`` values) and ``WireSeam``
/// (``WireMiddleware``s on ``WireRequest`` values), and one chain, ``ChainNext``, walks both.
public protocol PipelineSeam: Sendable {
    /// A stage of this seam.
    associatedtype Stage: Sendable
    /// What a stage is handed.
    associatedtype Input: Sendable
    /// What a stage gives back.
    associatedtype Output: Sendable
    /// Runs one stage.
    static func run(_ stage: Stage, _ input: Input, context: MiddlewareContext, next: ChainNext<Self>) async throws -> Output
    /// The request an error names, when the input is one.
    static func request(of input: Input) -> Request?
}

/// The rest of a seam's chain, as a function a stage calls: ``MiddlewareNext`` on the request
/// seam, ``WireNext`` on the wire seam.
///
/// It holds the chain's stages and a position in them, so a call walks the client's array of
/// stages instead of allocating a closure per stage. A stage may call it zero, one or several
/// times, and may hand the stages below changed facts (``callAsFunction(_:context:)``): a
/// ``MiddlewareContext/Fields/deadline`` moved earlier is enforced from there on.
public struct ChainNext<Seam: PipelineSeam>: Sendable {
    private let stages: [Seam.Stage]
    private let index: Int
    /// What the next stage is told about the call, unless the caller passes a changed copy.
    private let context: MiddlewareContext

    init(_ stages: [Seam.Stage], at index: Int = 0, context: MiddlewareContext) {
        self.stages = stages
        self.index = index
        self.context = context
    }

    /// Sends `input` through the rest of the chain, with the context this stage was given.
    public func callAsFunction(_ input: Seam.Input) async throws -> Seam.Output {
        // The context this stage was given has no deadline the chain does not already enforce.
        try await run(input, context: context)
    }

    /// Sends `input` through the rest of the chain with changed facts: the stages below see
    /// `context`, the stages above keep theirs. A ``MiddlewareContext/Fields/deadline`` moved earlier
    /// is enforced from here on: the call ends with ``APIError/Code/timedOut`` once it passes.
    ///
    /// ```swift
    /// var context = context
    /// context.tightenDeadline(within: .seconds(5))   // at most 5 s more; never later than the call's deadline
    /// return try await next(request, context: context)
    /// ```
    public func callAsFunction(_ input: Seam.Input, context: MiddlewareContext) async throws -> Seam.Output {
        guard context.tightensDeadline(of: self.context) else { return try await run(input, context: context) }
        return try await context.enforcingDeadline(request: Seam.request(of: input)) {
            try await run(input, context: context)
        }
    }

    /// Runs the next stage with `context`.
    @inline(__always)
    private func run(_ input: Seam.Input, context: MiddlewareContext) async throws -> Seam.Output {
        guard index < stages.count else {
            // The encoding stage ends every request chain and the transport stage every wire
            // chain, and neither calls on: only a broken chain gets here.
            throw APIError(.invalidRequest, localized: "the middleware chain ended without a transport", request: Seam.request(of: input))
        }
        return try await Seam.run(stages[index], input, context: context, next: ChainNext(stages, at: index + 1, context: context))
    }
}

/// A stage of either seam made from a closure: ``AnyMiddleware`` on the request seam,
/// ``AnyWireMiddleware`` on the wire seam.
public struct AnyStage<Seam: PipelineSeam>: Sendable {
    let body: @Sendable (Seam.Input, MiddlewareContext, ChainNext<Seam>) async throws -> Seam.Output

    /// Wraps a closure.
    public init(_ body: @escaping @Sendable (Seam.Input, MiddlewareContext, ChainNext<Seam>) async throws -> Seam.Output) {
        self.body = body
    }
}
