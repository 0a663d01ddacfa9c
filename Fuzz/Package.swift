// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for every parser of outside input. Not part of the library's build: run
// them with `Fuzz/run.sh [seconds-per-target]`, which builds this package with AddressSanitizer
// and coverage instrumentation and links libFuzzer's driver.
let package = Package(
    name: "CallsignFuzz",
    dependencies: [
        .package(name: "Callsign", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "CallsignFuzz",
            dependencies: [
                .product(name: "Callsign", package: "Callsign"),
                .product(name: "CallsignOpenAPI", package: "Callsign"),
                .product(name: "CallsignPostgres", package: "Callsign"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // No Swift entry point: libFuzzer's driver is the program's main.
            swiftSettings: [.unsafeFlags(["-parse-as-library"]), .enableUpcomingFeature("InternalImportsByDefault")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
