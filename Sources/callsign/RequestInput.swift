import ArgumentParser
import Callsign
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `-f/--form-items` and `--ignore-stdin`: how items and piped standard input become the body,
/// as HTTPie makes it — and a body that always agrees with the `Content-Type` sent.
struct InputOptions: ParsableArguments {
    @Flag(
        name: [.customShort("f"), .customLong("form-items")],
        help: .localized("Send the items as a form, as HTTPie's -f: URL-encoded, or multipart when an item is a file (name@FILE). (--form is curl's -F.)"))
    var formItems = false

    @Flag(name: .customLong("ignore-stdin"), help: .localized("Never read standard input as the body, even when it is piped (for scripts and cron)."))
    var ignoreStdin = false

    /// The most piped standard input read as a body: it is read whole, to choose its
    /// `Content-Type`. A larger one is streamed with `--body @-`.
    static let standardInputLimit = 64 * 1024 * 1024

    /// Makes the body agree with the `Content-Type` the request will carry, and reads piped
    /// standard input as the body when nothing else gives one.
    ///
    /// - `-f`: the items go as `application/x-www-form-urlencoded`, or `multipart/form-data` when
    ///   a file item is present;
    /// - a `Content-Type` header given (`-H` or an item) chooses how items are encoded: a form,
    ///   multipart (the header is then the encoder's, with its boundary) or JSON; any other type
    ///   cannot carry items, and says so rather than send JSON under another name;
    /// - standard input, when it is a pipe or a file (not a terminal, not `/dev/null`), no body is
    ///   given and no item is a body item: its bytes, with the header's type, else `-f`'s, else
    ///   `application/json` when they are JSON, `text/plain; charset=utf-8` when they are text,
    ///   else `application/octet-stream`. An empty input sends no body.
    ///
    /// - Parameters:
    ///   - files: the file items (`name@FILE`, with `-f`).
    ///   - multipartFields: the `-F` fields, which a file item joins in one form.
    ///   - explicitBody: whether `--body`, `--json` or `-F` gave the body.
    func shape(
        _ request: inout Request, files: [(name: String, path: String)], multipartFields: [String], explicitBody: Bool
    ) async throws(APIError) {
        let declared = request.headers["Content-Type"].map { Response.mediaType(of: $0[...]) }
        let carriesItems = !request.parameters.isEmpty && request.contentType != .query
            && ![.get, .head, .delete, .options].contains(request.method)
        if formItems || !files.isEmpty {
            guard !explicitBody || !multipartFields.isEmpty else {
                throw cliError(.invalidRequest, "-f sends the items as a form: leave out --body and --json")
            }
            if let declared, declared != "application/x-www-form-urlencoded", declared != "multipart/form-data" {
                throw cliError(.invalidRequest, "-f sends a form, but the Content-Type header says \(declared)")
            }
            if !files.isEmpty {
                var form = try BodyArguments.multipart(multipartFields)
                for file in files {
                    form.append(fileAt: try BodyArguments.existingFile(file.path, option: "\(file.name)@"), name: file.name)
                }
                request.body = .multipart(form)  // the items are its first fields
                request.headers.remove("Content-Type")  // the form's own, with its boundary
            } else if declared == "multipart/form-data" {
                request.contentType = .multipartFormData
                request.headers.remove("Content-Type")
            } else {
                request.contentType = .formURLEncoded
            }
        } else if let declared, carriesItems, !explicitBody {
            switch declared {
            case "application/x-www-form-urlencoded": request.contentType = .formURLEncoded
            case "multipart/form-data":
                request.contentType = .multipartFormData
                request.headers.remove("Content-Type")
            case _ where declared == "application/json" || declared.hasSuffix("+json"): request.contentType = .json
            default:
                throw cliError(
                    .invalidRequest,
                    "items are sent as JSON or a form, but the Content-Type header says \(declared): give the body with --body, or leave out the header")
            }
        }
        guard !ignoreStdin, !explicitBody, request.body == nil, !carriesItems, Self.standardInputIsPiped() else { return }
        let bytes = try await Self.readStandardInput(limit: Self.standardInputLimit)
        guard !bytes.isEmpty else { return }
        request.body = .data(bytes, contentType: declared == nil ? Self.mediaType(of: bytes, form: formItems) : nil)
    }

    /// The `Content-Type` for piped bytes with no header to name it.
    static func mediaType(of bytes: Data, form: Bool) -> String {
        if form { return "application/x-www-form-urlencoded" }
        if JSONText.isValid(bytes) { return "application/json" }
        if let text = String(data: bytes, encoding: .utf8), !text.unicodeScalars.contains(where: { $0.value == 0 }) {
            return "text/plain; charset=utf-8"
        }
        return "application/octet-stream"
    }

    /// Whether standard input is a pipe, a socket or a regular file: what a shell's `|` or `<`
    /// gives. A terminal is a person typing, and a character device (`/dev/null`, what cron and
    /// CI give) has nothing to send.
    static func standardInputIsPiped() -> Bool {
        guard isatty(STDIN_FILENO) == 0 else { return false }
        var info = stat()
        guard fstat(STDIN_FILENO, &info) == 0 else { return false }
        let kind = info.st_mode & S_IFMT
        return kind == S_IFIFO || kind == S_IFREG || kind == S_IFSOCK
    }

    /// Standard input to its end, at most `limit` bytes: past it, an error that names the limit
    /// and the streaming alternative. Read on a thread of its own (a pipe blocks until its writer
    /// writes or closes).
    static func readStandardInput(limit: Int) async throws(APIError) -> Data {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Data, APIError>, Never>) in
            Thread.detachNewThread { continuation.resume(returning: readToEnd(STDIN_FILENO, limit: limit)) }
        }
        return try outcome.get()
    }

    /// Reads `descriptor` to its end, at most `limit` bytes.
    private static func readToEnd(_ descriptor: Int32, limit: Int) -> Result<Data, APIError> {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(cliError(.invalidRequest, "standard input cannot be read (errno \(errno))"))
            }
            if count == 0 { return .success(data) }
            guard data.count + count <= limit else {
                return .failure(cliError(.invalidRequest, "standard input gave more than \(limit) bytes: stream it with --body @- instead"))
            }
            data.append(contentsOf: buffer[0..<count])
        }
    }
}
