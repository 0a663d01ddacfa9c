import ArgumentParser
import Callsign
import Foundation

/// `--cacert`, `--cert`/`--key`, `--pinnedpubkey` (and `--pin`), `--tlsv1.3`, `--http1.1` and
/// `--http2`, named as curl names them. There is deliberately no `--insecure`: trust a private
/// CA with `--cacert` instead of trusting everyone.
struct TLSOptions: ParsableArguments {
    @Option(name: .customLong("cacert"), help: .localized("Trust only the certificate authorities in this PEM file (a private CA), not the system's."))
    var authorityFile: String?

    @Option(name: .customLong("cert"), help: .localized("A client certificate for servers that ask for one (mutual TLS): PEM with --key, or a PKCS#12 file (.p12, .pfx, or --cert-type P12) with --pass-env."))
    var certificateFile: String?

    @Option(name: .customLong("cert-type"), help: .localized("The form of --cert: PEM (the default) or P12 (PKCS#12; a .p12 or .pfx name says so by itself)."))
    var certificateType: String?

    @Option(name: .customLong("pass-env"), help: .localized("The environment variable that holds the PKCS#12 password of --cert (never on the command line, where ps shows it)."))
    var passwordVariable: String?

    @Option(name: .customLong("key"), help: .localized("The private key (PEM) of --cert."))
    var keyFile: String?

    @Option(
        name: .customLong("pinnedpubkey"),
        help: .localized("Accept the server only if its certificate has one of these public keys: sha256//BASE64[;sha256//BASE64…], as curl writes them."))
    var pinnedKeys: String?

    @Option(name: .customLong("pin"), help: .localized("A public-key pin, sha256/BASE64; repeat it for backup keys."))
    var pins: [String] = []

    @Flag(name: .customLong("tlsv1.3"), help: .localized("Refuse servers that cannot speak TLS 1.3."))
    var requiresTLS13 = false

    @Flag(name: .customLong("http1.1"), help: .localized("Use HTTP/1.1 even where the server offers HTTP/2."))
    var http1 = false

    @Flag(name: .customLong("http2"), help: .localized("Let TLS negotiate HTTP/2 where the server offers it (the default)."))
    var http2 = false

    func validate() throws {
        if http1 && http2 { throw ValidationError(localized("--http1.1 and --http2 cannot be used together")) }
        if let certificateType, !["PEM", "P12"].contains(certificateType.uppercased()) {
            throw ValidationError(localized("--cert-type is PEM or P12"))
        }
        if pkcs12 {
            if keyFile != nil { throw ValidationError(localized("a PKCS#12 --cert holds its key: leave out --key")) }
            if passwordVariable == nil { throw ValidationError(localized("a PKCS#12 --cert needs its password: --pass-env NAME, the variable that holds it")) }
        } else {
            if (certificateFile == nil) != (keyFile == nil) { throw ValidationError(localized("--cert and --key go together")) }
            if passwordVariable != nil { throw ValidationError(localized("--pass-env is the password of a PKCS#12 --cert")) }
        }
        // An empty file name (an unset variable) is a mistake, never "use the defaults".
        for (option, value) in [("--cacert", authorityFile), ("--cert", certificateFile), ("--key", keyFile)] where value?.isEmpty == true {
            throw ValidationError(localized("\(option) names no file (an unset variable?)"))
        }
        if pins.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            throw ValidationError(localized("--pin is empty (an unset variable?): give sha256/BASE64"))
        }
        _ = try pinnedKeys.map(Self.curlPins)
    }

    /// The TLS settings these options ask for.
    func settings() throws -> TLSSettings {
        var settings = TLSSettings()
        if let authorityFile {
            settings.trustRoots = .only(try TLSCertificate.load(pemFile: URL(fileURLWithPath: authorityFile)))
        }
        if let certificateFile, pkcs12, let passwordVariable {
            guard let password = ProcessInfo.processInfo.environment[passwordVariable] else {
                throw cliError(.invalidRequest, "--pass-env: the variable \(passwordVariable) is not set")
            }
            settings.clientIdentity = try TLSClientIdentity.load(pkcs12File: URL(fileURLWithPath: certificateFile), password: password)
        } else if let certificateFile, let keyFile {
            settings.clientIdentity = try TLSClientIdentity(
                certificatePEM: try Self.read(certificateFile, option: "--cert"), privateKeyPEM: try Self.read(keyFile, option: "--key"))
        }
        let all = pins + (try pinnedKeys.map(Self.curlPins) ?? [])
        // One command calls one host: its pins apply to whichever host that is.
        if !all.isEmpty { settings.pins = try CertificatePins(["*": all]) }
        if requiresTLS13 { settings.minimumVersion = .tls13 }
        settings.allowsHTTP2 = !http1
        return settings
    }

    /// Whether `--cert` is a PKCS#12 file: so typed, or so named.
    private var pkcs12: Bool {
        if let certificateType { return certificateType.uppercased() == "P12" }
        guard let certificateFile else { return false }
        return [".p12", ".pfx"].contains { certificateFile.lowercased().hasSuffix($0) }
    }

    /// curl's pin list: pins separated by `;`, written `sha256//`; Callsign's pins are `sha256/`.
    /// An option that was given but names no pin — an empty value (an unset `$PIN`), `;`, an
    /// empty piece — is a usage error, never "no pinning": pinning must not fail open.
    static func curlPins(_ list: String) throws -> [String] {
        let pieces = list.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !pieces.contains(where: \.isEmpty) else {
            throw ValidationError(localized("--pinnedpubkey names no pin or an empty one (an unset variable?): give sha256//BASE64[;sha256//BASE64…]"))
        }
        return pieces.map { pin in pin.hasPrefix("sha256//") ? "sha256/" + pin.dropFirst("sha256//".count) : pin }
    }

    /// A PEM file: at most `TLSCertificate.maximumPEMFileSize` bytes, UTF-8.
    private static func read(_ path: String, option: String) throws -> String {
        let data = try FileReader.read(URL(fileURLWithPath: path), limit: TLSCertificate.maximumPEMFileSize) { error in
            cliError(.invalidRequest, "\(option): \(path) cannot be read", underlyingError: error)
        } tooLarge: { limit in
            cliError(.invalidRequest, "\(option): \(path) is larger than \(limit) bytes; a PEM file of certificates or a key is much smaller")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw cliError(.invalidRequest, "\(option): \(path) is not UTF-8 text, as a PEM file is")
        }
        return text
    }
}
