public import Foundation
public import Logging

extension APIClient {
    /// Everything an ``APIClient`` needs to know that is not an API definition.
    ///
    /// A value with a documented default for every property; adjust a copy with a closure:
    ///
    /// ```swift
    /// let client = APIClient(configuration: .init {
    ///     $0.baseURL = URL(string: "https://api.example.com/")
    ///     $0.timeout = .seconds(15)
    ///     $0.decoder.keyDecodingStrategy = .convertFromSnakeCase
    /// })
    /// ```
    public struct Configuration: Sendable {
        /// The base URL when neither the request nor its definition has one. Default `nil`.
        public var baseURL: URL?
        /// Headers sent with every request; a definition's or call's header of the same name
        /// wins. Default: a `User-Agent` naming Callsign.
        public var headers: Headers
        /// The time limit for one attempt: sending, waiting and reading the whole body.
        /// Default 60 seconds.
        public var timeout: Duration
        /// The decoder ``Response/decode(_:decoder:)`` uses. Default: a plain `JSONDecoder`.
        public var decoder: JSONDecoder
        /// The encoder for `Encodable` bodies built by the client. Default: a plain `JSONEncoder`.
        public var encoder: JSONEncoder
        /// The largest response body read into memory; a larger one fails with
        /// ``APIError/Code/responseTooLarge`` without reading further. Default 64 MiB.
        public var maxResponseBodySize: Int
        /// Where Callsign logs. Default `nil`: silent.
        public var logger: Logger?
        /// The adaptive envelope for every response, unless a definition or request turns it
        /// off. Default `nil` (off).
        public var envelope: EnvelopePolicy?
        /// Parameter encoders by content type, and the query string rules. Default: the built-ins.
        public var encoders: ParameterEncoders
        /// Statuses ``Response/validate()`` accepts when the request does not say. Default 200–299.
        public var acceptedStatusCodes: StatusCodes
        /// Extra checks ``Response/validate()`` runs on every response. Default none.
        public var validators: [any ResponseValidator]

        /// The defaults.
        public static let `default` = Configuration()

        /// Creates the default configuration.
        public init() {
            baseURL = nil
            headers = ["User-Agent": "Callsign/\(APIClient.version)"]
            timeout = .seconds(60)
            decoder = JSONDecoder()
            encoder = JSONEncoder()
            maxResponseBodySize = 64 * 1024 * 1024
            logger = nil
            envelope = nil
            encoders = ParameterEncoders()
            acceptedStatusCodes = .successful
            validators = []
        }

        /// Creates the default configuration adjusted by `configure`.
        public init(_ configure: (inout Configuration) -> Void) {
            self.init()
            configure(&self)
        }

        /// A copy adjusted by `configure`.
        public func with(_ configure: (inout Configuration) -> Void) -> Configuration {
            var copy = self
            configure(&copy)
            return copy
        }
    }
}

extension APIClient {
    /// The library's version.
    public static let version = "0.1.0"
}
