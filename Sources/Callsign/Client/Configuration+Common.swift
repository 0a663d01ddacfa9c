extension APIClient.Configuration {
    /// Parameters and headers added to every request (``APIClient/Configuration/common``), as
    /// xAPI's common parameters: computed per request from its tag.
    ///
    /// ```swift
    /// configuration.common.parameters = { tag in tag == "system1" ? ["app": "demo"] : [:] }
    /// configuration.common.headers = { _ in ["X-Trace": .string(UUID().uuidString)] }
    /// ```
    public struct CommonValues: Sendable {
        /// Parameters added to every request; a call's own parameter of the same name wins.
        /// Default `nil`.
        public var parameters: (@Sendable (_ tag: String?) async throws -> Parameters)? = nil
        /// Headers added to every request; a call's own header of the same name wins. Default `nil`.
        public var headers: (@Sendable (_ tag: String?) async throws -> Headers)? = nil
        /// Where common parameters go when the request does not say. Default
        /// ``CommonParameterPlacement/query``, xAPI's `xAPICommonParamsUsagePath`: in the query
        /// string whatever the method, so a POST's JSON body stays exactly the call's.
        ///
        /// ```swift
        /// configuration.common.placement = .parameters   // xAPICommonParamsUsageParams: with the call's parameters
        /// ```
        public var placement: CommonParameterPlacement = .query

        /// Creates the defaults: no common values.
        public init() {}
    }
}
