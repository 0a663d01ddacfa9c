// swift-tools-version: 6.1
import PackageDescription

/// Settings every target shares: Swift 6 language mode (strict concurrency) plus the
/// upcoming features we want enforced everywhere. Applied in one loop below.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Callsign",
    // English is written once, in the code; Resources/zh-Hans.lproj holds the translations.
    defaultLocalization: "en",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Callsign", targets: ["Callsign"]),
        .library(name: "CallsignSQLite", targets: ["CallsignSQLite"]),
        .library(name: "CallsignTesting", targets: ["CallsignTesting"]),
        .library(name: "CallsignOpenAPI", targets: ["CallsignOpenAPI"]),
        .library(name: "CallsignPostgres", targets: ["CallsignPostgres"]),
        .executable(name: "callsign", targets: ["callsign"]),
    ],
    // Every trait is on by default: a clone builds and tests everything. An app that wants the
    // core alone turns them off (`traits: []` on its `.package` line) and resolves only the core's
    // seven packages; a package only a disabled trait uses is never fetched (a platform
    // condition alone would still fetch it).
    traits: [
        .trait(name: "AsyncHTTPClient", description: "The AsyncHTTPClient transport, the default transport on Linux (else URLSession)."),
        .trait(name: "SQLite", description: "The CallsignSQLite product (GRDB)."),
        .trait(name: "PostgreSQL", description: "The CallsignPostgres product (PostgresNIO, ServiceLifecycle)."),
        .trait(name: "OpenAPI", description: "The CallsignOpenAPI product (OpenAPIKit)."),
        .trait(name: "TestServers", description: "The CallsignTesting product: in-process HTTP, TLS and raw servers (SwiftNIO)."),
        .trait(
            name: "CommandLine", description: "The callsign tool, with every product it uses.",
            enabledTraits: ["AsyncHTTPClient", "SQLite", "PostgreSQL", "OpenAPI", "TestServers"]),
        .default(enabledTraits: ["AsyncHTTPClient", "SQLite", "PostgreSQL", "OpenAPI", "TestServers", "CommandLine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.0"),
        // CryptoKit on Apple platforms; on Linux already in AsyncHTTPClient's graph.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"6.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        // CallsignTesting's TLS server: HTTP/2 by ALPN, and certificates made at run time.
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        // CallsignOpenAPI: OpenAPI 3.0/3.1 documents as definitions.
        .package(url: "https://github.com/mattpolzin/OpenAPIKit.git", from: "6.4.0"),
        // CallsignOpenAPI: Callsign as the transport of swift-openapi-generator's clients.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // CallsignPostgres: the fleet's outbox and shared cache on PostgreSQL, and its worker as a Service.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The system's zlib, for gzip and deflate responses (and the test server's gzip routes).
        .systemLibrary(name: "CCallsignZlib", path: "Sources/CCallsignZlib"),
        .target(
            name: "Callsign",
            dependencies: [
                "CCallsignZlib",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The one decision on a server's certificates (trust roots, host, validity), the
                // same code on every platform: X.509 path validation, not a hand-written one.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(
                    name: "AsyncHTTPClient", package: "async-http-client",
                    condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                // AsyncHTTPClient's TLS, named only to tell its errors apart (certificate, handshake).
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                // The TLS check that tells an expired certificate from an untrusted one connects by itself.
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                // WebSockets on Linux: SwiftNIO's HTTP upgrade, frame codec and fragment aggregator.
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                .product(name: "NIOTLS", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
                // A large body collected in memory becomes `Data` without a second copy.
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio", condition: .when(platforms: [.linux, .android, .windows], traits: ["AsyncHTTPClient"])),
            ],
            resources: [.process("Resources")]
        ),
        // The durable offline queue and HTTP cache on SQLite: its own product, so apps that
        // need neither never build GRDB.
        .target(
            name: "CallsignSQLite",
            dependencies: [
                "Callsign",
                .product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: ["SQLite"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The offline queue (an outbox) and HTTP cache on PostgreSQL, shared by a fleet of
        // processes: its own product, so apps that do not need it never build postgres-nio.
        .target(
            name: "CallsignPostgres",
            dependencies: [
                "Callsign",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // OpenAPI documents as definitions: its own product, so apps that do not read OpenAPI
        // never build OpenAPIKit.
        .target(
            name: "CallsignOpenAPI",
            dependencies: [
                "Callsign",
                .product(name: "OpenAPIKit", package: "OpenAPIKit", condition: .when(traits: ["OpenAPI"])),
                .product(name: "OpenAPIKit30", package: "OpenAPIKit", condition: .when(traits: ["OpenAPI"])),
                .product(name: "OpenAPIKitCompat", package: "OpenAPIKit", condition: .when(traits: ["OpenAPI"])),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "CallsignTesting",
            dependencies: [
                "Callsign",
                "CCallsignZlib",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["TestServers"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["TestServers"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["TestServers"])),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .when(traits: ["TestServers"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["TestServers"])),
                .product(name: "NIOHTTP2", package: "swift-nio-http2", condition: .when(traits: ["TestServers"])),
                .product(name: "X509", package: "swift-certificates", condition: .when(traits: ["TestServers"])),
                .product(name: "SwiftASN1", package: "swift-asn1", condition: .when(traits: ["TestServers"])),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "callsign",
            dependencies: [
                "Callsign",
                "CallsignSQLite",
                "CallsignTesting",
                "CallsignOpenAPI",
                "CallsignPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["CommandLine"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // Seals the secrets a --session file keeps (AES-GCM under a per-user key).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.process("Resources")]
        ),
        // The benchmark's allocation counter: a malloc interposer linked into the benchmark only.
        .target(name: "CMallocCounter", path: "Benchmarks/Sources/CMallocCounter"),
        // Benchmarks: an executable beside the products, adding no dependency to them.
        // Run with `swift run -c release CallsignBenchmarks`.
        .executableTarget(
            name: "CallsignBenchmarks",
            dependencies: [
                "CMallocCounter",
                "Callsign",
                "CallsignSQLite",
                "CallsignTesting",
                "CallsignOpenAPI",
                "CallsignPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["TestServers"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["TestServers"])),
            ],
            path: "Benchmarks/Sources/CallsignBenchmarks"
        ),
        .testTarget(
            name: "CallsignTests",
            dependencies: [
                "Callsign", "CallsignSQLite", "CallsignTesting", "CallsignOpenAPI", "CallsignPostgres", "callsign",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle", condition: .when(traits: ["PostgreSQL"])),
                // The generated client in OpenAPIClient/Generated (see scripts/generate-openapi-client).
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
            ],
            exclude: ["OpenAPIClient/openapi.yaml", "OpenAPIClient/openapi-generator-config.yaml"],
            resources: [.copy("Fixtures")]
        ),
        // Storages written as an app would, with public API only (a test checks that no file here
        // uses @testable import), held to the conformance suites CallsignTesting ships. Its own
        // target, so no internal name can leak in; a few files, linked into the same test bundle.
        .testTarget(
            name: "CallsignOutsideTests",
            dependencies: ["Callsign", "CallsignTesting"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system && target.name != "CMallocCounter" {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
