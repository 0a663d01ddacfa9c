public import Foundation

extension APIClient.Configuration {
    /// How responses are judged and read (``APIClient/Configuration/responses``).
    public struct Responses: Sendable {
        /// The decoder ``Response/decode(_:decoder:)`` uses. Default: a plain `JSONDecoder`.
        public var decoder: JSONDecoder = JSONDecoder()
        /// The adaptive envelope for every response, unless a definition or request turns it
        /// off. Default `nil` (off).
        public var envelope: EnvelopePolicy? = nil
        /// Statuses ``Response/validate()`` accepts when the request does not say. Default 200–299.
        public var acceptedStatusCodes: StatusCodes = .successful
        /// Extra checks ``Response/validate()`` runs on every response. Default none.
        public var validators: [any ResponseValidator] = []
        /// Whether compressed answers are asked for and decoded, with the limits that stop a
        /// decompression bomb. Default ``DecompressionPolicy/default``.
        public var decompression: DecompressionPolicy = .default
        /// Types by the names definitions give in `Response Class` (RFAPI), for
        /// ``Response/decodeResponseClass()`` and callbacks' `decoded`. Default: empty.
        ///
        /// ```swift
        /// configuration.responses.classes.register(Profile.self)
        /// ```
        public var classes: ResponseClasses = ResponseClasses()

        /// Creates the defaults.
        public init() {}
    }
}
