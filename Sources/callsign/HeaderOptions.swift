/// `-H`/`--header` options, taken out of the command line before ArgumentParser reads it.
///
/// ArgumentParser stores a repeated option's values by copying the array on every occurrence,
/// so thousands of `-H` options cost time quadratic in their number (4,000 took 24 s). Taking
/// them out first, in one pass, keeps reading the command line linear; the option stays declared
/// (``HeaderOption``) for help and for parsing in tests, and the commands read both lists
/// (``all(_:)``).
///
/// Only the commands that take `-H` are read this way; anything unusual — a `-H` without a value,
/// or anything after `--` — is left where it is, for ArgumentParser to accept or refuse.
enum HeaderOptions {
    /// The commands whose `-H` is taken out.
    static let commands: Set<String> = ["call", "get", "post", "put", "patch", "delete", "head", "download"]

    /// The process's arguments (without the program's name) split once: the rest, for
    /// ArgumentParser, and the values of every `-H`/`--header`, in order.
    static let process: (rest: [String], headers: [String]) = extract(Array(CommandLine.arguments.dropFirst()))

    /// `arguments` without their `-H VALUE`, `--header VALUE` and `--header=VALUE` options, and those
    /// options' values in order. One pass: linear in the number of arguments.
    static func extract(_ arguments: [String]) -> (rest: [String], headers: [String]) {
        guard let command = arguments.first, commands.contains(command) else { return (arguments, []) }
        var rest: [String] = [command]
        rest.reserveCapacity(arguments.count)
        var headers: [String] = []
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                rest.append(contentsOf: arguments[index...])
                break
            }
            if argument == "-H" || argument == "--header", index + 1 < arguments.count {
                headers.append(arguments[index + 1])
                index += 2
                continue
            }
            if argument.hasPrefix("--header=") {
                headers.append(String(argument.dropFirst("--header=".count)))
            } else {
                rest.append(argument)
            }
            index += 1
        }
        return (rest, headers)
    }

    /// The `-H` values ArgumentParser read (`parsed`: the default-options file's, or a test's)
    /// followed by those taken out of the process's command line, which replace the parsed ones
    /// of the same name: the command line wins over the file.
    static func all(_ parsed: [String]) -> [String] {
        all(parsed, commandLine: process.headers)
    }

    static func all(_ parsed: [String], commandLine: [String]) -> [String] {
        guard !commandLine.isEmpty, !parsed.isEmpty else { return parsed + commandLine }
        func name(_ header: String) -> String {
            let raw = header.prefix { $0 != ":" }
            return String(raw.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
        }
        let given = Set(commandLine.map(name))
        return parsed.filter { !given.contains(name($0)) } + commandLine
    }
}
