import Crypto
package import Foundation

/// Digests from swift-crypto (CryptoKit on Apple platforms): Callsign hand-rolls no cryptography.
package enum Digest {
    /// The SHA-256 of `text`'s UTF-8 bytes, as lowercase hex.
    package static func sha256Hex(_ text: String) -> String {
        sha256Hex(Data(text.utf8))
    }

    /// The SHA-256 of `data`, as lowercase hex (what `shasum -a 256` prints).
    package static func sha256Hex(_ data: Data) -> String {
        hex(SHA256.hash(data: data))
    }

    /// The SHA-256 of `parts` one after the other, as lowercase hex, without joining them first.
    package static func sha256Hex(_ parts: [Data]) -> String {
        var hasher = SHA256()
        for part in parts { hasher.update(data: part) }
        return hex(hasher.finalize())
    }

    /// HMAC-SHA256 of `text` under `key`, as lowercase hex: a digest nobody without the key can
    /// test guesses against.
    static func hmacHex(key: Data, _ text: String) -> String {
        hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: key)))
    }

    /// 32 random bytes from the system's secure generator, for a new HMAC key.
    static func randomKey() -> Data {
        Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var characters: [UInt8] = []
        for byte in bytes {
            characters.append(digits[Int(byte >> 4)])
            characters.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: characters, as: UTF8.self)
    }
}
