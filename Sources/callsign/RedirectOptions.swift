import ArgumentParser
import Callsign
import Foundation

/// `--follow`/`--no-follow` and `--max-redirs N`: how redirects are followed, with the library's
/// own ``RedirectPolicy`` (the same rules on every transport, credentials kept to their origin).
///
/// Both the library and the command line follow up to 5 redirects by default, so `callsign call X`
/// answers as the same call in code does; curl and HTTPie users turn it off with `--no-follow`.
struct RedirectOptions: ParsableArguments {
    @Flag(
        inversion: .prefixedNo,
        help: .localized("Follow redirects (the default, as the library does); --no-follow prints the 3xx answer itself and exits 0."))
    var follow = true

    @Option(
        name: [.customLong("max-redirs"), .customLong("max-redirects")],
        help: .localized("The most redirects followed for one call, 0 to 50 (curl's --max-redirs, HTTPie's --max-redirects); one more is an error, exit 47. Default: 5.", valueName: "n"))
    var maximumRedirects: Int?

    /// The most hops `--max-redirs` takes: a chain longer than this is a loop in all but name.
    static let maximumAllowed = 50

    func validate() throws {
        if let maximumRedirects, !(0...Self.maximumAllowed).contains(maximumRedirects) {
            throw ValidationError(localized("--max-redirs takes 0 to \(Self.maximumAllowed)"))
        }
        if !follow, maximumRedirects != nil {
            throw ValidationError(localized("--no-follow follows none: leave out --max-redirs"))
        }
    }

    /// The policy: the library's default, with the hops the options give.
    func policy() -> RedirectPolicy {
        guard follow else { return .none }
        var policy = RedirectPolicy.default
        if let maximumRedirects { policy.maximumHops = maximumRedirects }
        return policy
    }

    /// With `--no-follow` a redirect is the answer asked for: accepted, like a success.
    func accept(in request: inout Request) {
        guard !follow else { return }
        let accepted = request.acceptedStatusCodes ?? .successful
        request.acceptedStatusCodes = StatusCodes(ranges: accepted.ranges + [300...399])
    }
}
