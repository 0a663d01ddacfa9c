import ArgumentParser
import Callsign

extension MessageCatalog {
    /// The command line's own words, in `Resources/zh-Hans.lproj/Localizable.strings`.
    static let cli = MessageCatalog(bundleName: "Callsign_callsign")
}

/// `message` in the process's language (`LANG=zh_CN.UTF-8 callsign …` speaks Chinese).
func localized(_ message: LocalizedMessage) -> String {
    message.translated(by: .cli).resolved(in: .process)
}

/// An error in the command line's words.
func cliError(_ code: APIError.Code, _ message: LocalizedMessage, underlyingError: (any Error)? = nil) -> APIError {
    APIError(code, localized: message.translated(by: .cli), underlyingError: underlyingError)
}

extension ArgumentHelp {
    /// Help text in the process's language; `valueName` names the value in the usage line
    /// (`--write-out <format>`).
    static func localized(_ message: LocalizedMessage, valueName: String? = nil) -> ArgumentHelp {
        ArgumentHelp(callsign.localized(message), valueName: valueName)
    }
}
