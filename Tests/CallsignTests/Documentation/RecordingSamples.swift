import Callsign
import Foundation

// The ```swift blocks of MocksAndRecordings.md about archives from other tools, compiled here
// (ArticleSamplesTests checks them line for line); not run: the archive is the reader's own.
enum RecordingSamples {
    // MocksAndRecordings.md, "Recording and replaying": the entries a replay leaves out.
    static func skippedEntries() throws {
        let archive = try HARReplay(contentsOf: URL(fileURLWithPath: "chrome-export.har"))
        for skipped in archive.skippedEntries {
            print(skipped)   // "entry 7 has a response body of 5120 bytes that the archive does not hold (no content.text)"
        }
    }
}
