import ArgumentParser
import Callsign
import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: localized("Download a URL, or what an API answers, to a file — with a progress bar and resume."),
        discussion: localized("""
            Examples:
              callsign download https://example.com/big.iso -o big.iso
              callsign download Archive -D api.yaml -p id=7 -o archive.zip --continue
            The body is streamed to a partial file next to FILE and renamed into place once complete.
            --continue resumes an interrupted download of the same URL (Range + If-Range); if the server
            cannot continue it, the download starts again from zero.
            Without -o, the file is named as the server suggests in Content-Disposition (filename*, else
            filename), else after the URL's last path segment, else "download" (curl's -OJ, HTTPie's
            --download): always a plain name in the current folder — any path dropped, control characters
            replaced, leading dots removed, at most 255 bytes, never expanded ("~" is a file named "~", as
            with curl -OJ and wget). An existing file is never replaced without
            --force (exit 73). On a terminal a progress bar shows bytes,
            percentage, speed and time left; otherwise a line is printed every second.
            """)
    )

    @Argument(help: .localized("An http(s) URL, or an API name from --definitions."))
    var target: String

    @Option(name: [.short, .customLong("output")], help: .localized("The file to write. Without it, the name comes from Content-Disposition or the URL, in the current folder."))
    var output: String?

    @Flag(help: .localized("Without -o, replace a file that already has the name."))
    var force = false

    @Option(name: [.customShort("D"), .long], help: .localized("The definitions file, when TARGET is an API name."))
    var definitions: String?

    @Option(name: [.customShort("p"), .customLong("param")], help: .localized("A parameter: key=value or key:=json. Repeatable."))
    var parameters: [String] = []

    @OptionGroup var headers: HeaderOption

    @OptionGroup var clientOptions: ClientOptions
    @OptionGroup var sessions: SessionOption
    @OptionGroup var config: ConfigFileOption

    @Flag(name: .customLong("continue"), help: .localized("Resume an interrupted download instead of starting again."))
    var resume = false

    @Flag(name: [.short, .long], help: .localized("No progress output."))
    var quiet = false

    func validate() throws {
        if output == nil, resume {
            throw ValidationError(localized("--continue needs -o: without it the file name is only known from the answer"))
        }
    }

    func run() async throws {
        try await reportingErrors {
            let file = try definitions.map { path throws(APIError) in try DefinitionsArgument.loaded(path, baseURL: nil) }
            let loaded = file?.definitions
            var configuration = APIClient.Configuration()
            let explicit = try clientOptions.credentials.authentication(sendingTo: target, openAPI: file?.openAPI)
            try clientOptions.configure(&configuration, definitions: loaded, explicit: explicit)
            var request: Request
            if target.hasPrefix("http://") || target.hasPrefix("https://") {
                request = .get(target, parameters: try ParameterArguments.parse(parameters))
            } else {
                guard let loaded else {
                    throw cliError(.invalidRequest, "\(target) is not an http(s) URL; to download by API name, give --definitions")
                }
                request = try loaded.definition(named: target).request(parameters: try ParameterArguments.parse(parameters))
            }
            let givenHeaders = try headers.given()
            request.headers = request.headers.merging(givenHeaders)
            if explicit != nil { request.needsAuthorization = true }
            let session = try sessions.open(
                for: SessionPlace.target(of: request, definitions: loaded ?? APIDefinitions()), credentials: clientOptions.credentials, headers: givenHeaders)
            let jar = session?.lend(to: &request, configuration: &configuration, credentialsGiven: explicit != nil, quiet: quiet)
            let waits = clientOptions.limit(&request, configuration: &configuration, says: !quiet)
            let client = APIClient(definitions: loaded ?? APIDefinitions(), configuration: configuration)
            // Without -o the body goes to a name of Callsign's own in the current folder, renamed
            // to the name the answer suggests once it is complete.
            let named = output.map { URL(fileURLWithPath: $0) }
            let destination = named ?? URL(fileURLWithPath: ".callsign-download-\(UUID().uuidString)")
            let task = client.startDownload(request, to: destination, resuming: resume)
            let bar = ProgressBar(enabled: !quiet, terminal: ResponsePrinter.isTerminal(STDERR_FILENO))
            // The download runs in a task of the client's own: Ctrl-C (which cancels this task)
            // must cancel it too, or the transfer would run to its end. The partial file stays,
            // for --continue.
            let response = try await withTaskCancellationHandler {
                for await progress in task.progress where progress.direction == .download {
                    bar.show(progress)
                }
                return try await task.response
            } onCancel: {
                task.cancel()
            }
            if let session, let jar { try await session.save(cookies: jar) }
            waits.explain(response, quiet: quiet)
            if named == nil, response.status.code >= 400 { try? FileManager.default.removeItem(at: destination) }
            try response.validate()
            bar.finish()
            guard named == nil else { return report(response, destination) }
            let name = ContentDisposition.downloadName(
                field: HTTPField.Name("Content-Disposition").flatMap { response.headers[$0] }, url: response.request.url)
            // Joined to the current folder as a path component, never read as a path: Foundation's
            // URL(fileURLWithPath:) expands a leading "~" (even "~root") to a home folder, and the
            // name is the server's (curl -OJ and wget --content-disposition keep "~" as it is).
            let final = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
                .appendingPathComponent(name, isDirectory: false)
            do {
                if force {
                    try FileWriter.renameFinished(destination, over: final)
                } else if try !FileWriter.renameWithoutReplacing(destination, to: final) {
                    try? FileManager.default.removeItem(at: destination)
                    Terminal.error(localized("callsign: \(name) exists; give --force to replace it, or -o to name another file"))
                    throw ExitCode(73)
                }
            } catch let error as APIError {
                try? FileManager.default.removeItem(at: destination)
                throw error
            }
            report(response, final)
        }
    }

    private func report(_ response: Response, _ destination: URL) {
        let size = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? 0
        let saved = ByteCount.text(Int64(size))
        let path = output == nil ? destination.lastPathComponent : destination.path
        Terminal.out(localized(response.status.code == 206 ? "Saved \(path): \(saved) (resumed)" : "Saved \(path): \(saved)"))
    }
}

/// Draws download progress: a bar redrawn in place on a terminal, a line a second otherwise.
final class ProgressBar {
    private let enabled: Bool
    private let terminal: Bool
    private let started = ContinuousClock.now
    private var lastDraw: ContinuousClock.Instant?
    private var firstBytes: Int64?
    private var drewLine = false

    init(enabled: Bool, terminal: Bool) {
        self.enabled = enabled
        self.terminal = terminal
    }

    func show(_ progress: TransferProgress) {
        guard enabled else { return }
        let now = ContinuousClock.now
        let interval: Duration = terminal ? .milliseconds(100) : .seconds(1)
        let complete = progress.totalBytes.map { progress.completedBytes >= $0 } ?? false
        if let lastDraw, now - lastDraw < interval, !complete { return }
        lastDraw = now
        if firstBytes == nil { firstBytes = progress.completedBytes }
        let elapsed = max((now - started).seconds, 0.001)
        let speed = Double(progress.completedBytes - (firstBytes ?? 0)) / elapsed
        var parts: [String] = []
        if let fraction = progress.fraction {
            parts.append(String(format: "%3d%%", Int(fraction * 100)))
        }
        parts.append(
            "\(ByteCount.text(progress.completedBytes))" + (progress.totalBytes.map { " / \(ByteCount.text($0))" } ?? ""))
        parts.append("\(ByteCount.text(Int64(min(max(speed, 0), 9e18))))/s")
        if let total = progress.totalBytes, speed > 0 {
            parts.append("ETA \(Self.time(Double(total - progress.completedBytes) / speed))")
        }
        if terminal {
            let width = 24
            let filled = Int((progress.fraction ?? 0) * Double(width))
            let bar = "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            Terminal.redraw(bar + parts.joined(separator: "  "))
            drewLine = true
        } else {
            Terminal.error(localized("downloaded \(parts.joined(separator: "  "))"))
        }
    }

    func finish() {
        if enabled, terminal, drewLine { Terminal.endRedrawnLine() }
    }

    static func time(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 360_000 else { return "?" }  // past 100 hours, "?" says as much
        let total = Int(seconds.rounded(.up))
        return total >= 60 ? "\(total / 60)m\(total % 60)s" : "\(total)s"
    }
}

/// Byte counts for people: 1.5 MiB.
enum ByteCount {
    static func text(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
