import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Facts about the calling app sent as `X-Client-*` headers on every request
/// (APEReactiveNetworking), opt-in with one line:
///
/// ```swift
/// configuration.clientInfo = .automatic                      // from the main bundle and the system
/// configuration.clientInfo = ClientInfo.automatic.with(appName: "Surfboard", appVersion: "2.1")
/// configuration.clientInfo = .automatic.with(vendorIdentifier: UIDevice.current.identifierForVendor?.uuidString)
/// ```
///
/// Headers: `X-Client-OS`, `X-Client-OS-Version`, `X-Client-Device-Type` (the machine model,
/// or the architecture on Linux), `X-Client-Device-VendorId` (the identifier the app supplies,
/// `unknown` without one, as APE sent it), `X-Client-App-Name`, `X-Client-App-Version`.
///
/// Callsign never reads a hardware identifier itself: the vendor identifier is whatever the app
/// chooses to send (on iOS, `identifierForVendor`, which the user can reset by removing the
/// vendor's apps).
public struct ClientInfo: Sendable, Hashable {
    /// The operating system's name (`Linux`, `macOS`, `iOS`, …).
    public var operatingSystem: String
    /// The operating system's version (`6.1.0`, `18.2.0`).
    public var operatingSystemVersion: String
    /// The machine model (`iPhone16,2`, `Mac14,2`) or, on Linux, the architecture (`x86_64`).
    public var deviceType: String
    /// The app's name; default: the main bundle's name, else the process name.
    public var appName: String?
    /// The app's version; default: the main bundle's short version, if any.
    public var appVersion: String?
    /// An identifier of this device for this vendor's apps, supplied by the app (APE's
    /// `X-Client-Device-VendorId`); `nil` sends `unknown`. Default `nil`.
    public var vendorIdentifier: String? = nil

    /// Creates client info.
    public init(operatingSystem: String, operatingSystemVersion: String, deviceType: String, appName: String?, appVersion: String?) {
        self.operatingSystem = operatingSystem
        self.operatingSystemVersion = operatingSystemVersion
        self.deviceType = deviceType
        self.appName = appName
        self.appVersion = appVersion
    }

    /// What this process can tell about itself.
    public static var automatic: ClientInfo {
        let version = ProcessInfo.processInfo.operatingSystemVersion
        let bundle = Bundle.main.infoDictionary ?? [:]
        return ClientInfo(
            operatingSystem: osName,
            operatingSystemVersion: "\(version.majorVersion).\(version.minorVersion).\(version.patchVersion)",
            deviceType: machine,
            appName: (bundle["CFBundleName"] as? String) ?? ProcessInfo.processInfo.processName,
            appVersion: bundle["CFBundleShortVersionString"] as? String)
    }

    /// A copy with the vendor identifier the app supplies.
    ///
    /// ```swift
    /// configuration.clientInfo = .automatic.with(vendorIdentifier: storedInstallationID)
    /// ```
    public func with(vendorIdentifier: String?) -> ClientInfo {
        var copy = self
        copy.vendorIdentifier = vendorIdentifier
        return copy
    }

    /// A copy with the app's name and version.
    public func with(appName: String?, appVersion: String?) -> ClientInfo {
        var copy = self
        copy.appName = appName
        copy.appVersion = appVersion
        return copy
    }

    /// The headers sent; values with control characters are cleaned so they can always be sent.
    public var headers: Headers {
        var headers: Headers = [
            "X-Client-OS": Self.clean(operatingSystem), "X-Client-OS-Version": Self.clean(operatingSystemVersion),
            "X-Client-Device-Type": Self.clean(deviceType),
            "X-Client-Device-VendorId": vendorIdentifier.map(Self.clean).flatMap { $0.isEmpty ? nil : $0 } ?? "unknown",
        ]
        if let appName { headers["X-Client-App-Name"] = Self.clean(appName) }
        if let appVersion { headers["X-Client-App-Version"] = Self.clean(appVersion) }
        return headers
    }

    private static func clean(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F && $0.isASCII })
            .trimmingCharacters(in: .whitespaces)
    }

    private static var osName: String {
        #if os(macOS)
        "macOS"
        #elseif os(iOS)
        "iOS"
        #elseif os(tvOS)
        "tvOS"
        #elseif os(watchOS)
        "watchOS"
        #elseif os(visionOS)
        "visionOS"
        #elseif os(Linux)
        "Linux"
        #elseif os(Windows)
        "Windows"
        #else
        "unknown"
        #endif
    }

    private static var machine: String {
        #if canImport(Darwin)
        var size = 0
        sysctlbyname("hw.machine", nil, &size, nil, 0)
        guard size > 0 else { return "unknown" }
        var buffer = [CChar](repeating: 0, count: size)
        sysctlbyname("hw.machine", &buffer, &size, nil, 0)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #elseif canImport(Glibc)
        var info = utsname()
        guard uname(&info) == 0 else { return "unknown" }
        return withUnsafeBytes(of: &info.machine) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        #else
        return "unknown"
        #endif
    }
}
