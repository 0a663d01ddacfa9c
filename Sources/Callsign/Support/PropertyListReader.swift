import Foundation

/// The one door for property lists from outside — definitions files, and response bodies of
/// APIs whose definition says `Response Serializer: AFPropertyListResponseSerializer`: measured
/// by ``PropertyListDepth`` before Foundation reads them (its readers recurse once per level, and
/// a binary list's shared objects expand when walked), then converted to ``JSONValue``.
enum PropertyListReader {
    /// Why a property list was refused.
    enum Problem: Error {
        case tooDeep(Int)
        case tooManyValues(Int)
        case malformed(any Error)
        /// A date, data or other value where only JSON's kinds are allowed.
        case notJSON

        /// The reason, for a message that says what was being read.
        var reason: LocalizedMessage {
            switch self {
            case .tooDeep(let limit): "it nests deeper than \(limit) levels (Limits.maximumJSONDepth)" as LocalizedMessage
            case .tooManyValues(let limit):
                "it expands to more than \(limit) values (a shared value counts once per use)" as LocalizedMessage
            case .malformed(let error): "it is not a valid property list: \(error.localizedDescription)" as LocalizedMessage
            case .notJSON:
                "it holds a date, data or other value that is not a string, number, Boolean, array or dictionary" as LocalizedMessage
            }
        }
    }

    /// How dates and data, which JSON lacks, are read.
    enum Conversion {
        /// Refused (``Problem/notJSON``): definitions hold neither.
        case onlyJSONKinds
        /// As `JSONDecoder`'s default strategies read them back: a date as its seconds since
        /// 2001-01-01 (`.deferredToDate`), data as Base64 text (`.base64`).
        case decodable
    }

    /// The Foundation object a property list holds, after its measure: at most `maximumDepth`
    /// levels and `maximumValues` values once walked.
    static func object(_ data: Data, maximumDepth: Int, maximumValues: Int) throws(Problem) -> Any {
        switch PropertyListDepth.measure(data, depthLimit: maximumDepth, valueLimit: maximumValues) {
        case .tooDeep: throw .tooDeep(maximumDepth)
        case .tooManyValues: throw .tooManyValues(maximumValues)
        case .fine: break
        }
        do {
            return try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw .malformed(error)
        }
    }

    /// The value a property list holds.
    static func value(_ data: Data, maximumDepth: Int, maximumValues: Int, conversion: Conversion) throws(Problem) -> JSONValue {
        let object = try object(data, maximumDepth: maximumDepth, maximumValues: maximumValues)
        guard let value = JSONValue(foundationValue: object, convertingDatesAndData: conversion == .decodable) else { throw .notJSON }
        return value
    }
}
