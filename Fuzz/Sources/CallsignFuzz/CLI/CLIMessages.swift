import Callsign

// The command line's `cliError`, for the files linked here from Sources/callsign: the fuzzer
// needs the error, not its translation (the CLI's own version, in Localization.swift, translates
// through its resource bundle, which this package does not have).

func cliError(_ code: APIError.Code, _ message: String, underlyingError: (any Error)? = nil) -> APIError {
    APIError(code, message, underlyingError: underlyingError)
}
