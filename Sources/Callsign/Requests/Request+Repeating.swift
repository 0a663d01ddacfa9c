extension Request {
    /// Whether this request may reach the server more than once — the one rule the
    /// ``MiddlewareStage/retry`` and ``MiddlewareStage/hedging`` stages share: an idempotent
    /// method (RFC 9110: GET, HEAD, OPTIONS, TRACE, PUT, DELETE), or any other that carries an
    /// `Idempotency-Key`; and a body that can be read again (never a one-shot stream).
    var maySendAgain: Bool {
        guard self.body?.content.isReplayable ?? true else { return false }
        return isIdempotent || self.headers.contains("Idempotency-Key")
    }
}
