@testable import Callsign
import Testing

@Suite("A call's progress stream")
struct ProgressStreamTests {
    private func report(_ direction: TransferProgress.Direction, _ done: Int64, of total: Int64) -> TransferProgress {
        TransferProgress(direction: direction, completedBytes: done, totalBytes: total)
    }

    @Test("a slow reader gets the latest report of each direction: an upload's last report is never lost behind the download's")
    func latestPerDirection() async {
        let buffer = LatestProgress()
        let stream = buffer.stream()
        buffer.report(report(.upload, 0, of: 100))
        buffer.report(report(.upload, 50, of: 100))
        buffer.report(report(.download, 0, of: 10))
        buffer.report(report(.upload, 100, of: 100))
        buffer.report(report(.download, 10, of: 10))
        buffer.finish()
        buffer.report(report(.download, 99, of: 10))  // after the end: dropped
        var seen: [TransferProgress] = []
        for await progress in stream { seen.append(progress) }
        #expect(seen.map(\.direction) == [.upload, .download])
        #expect(seen.map(\.completedBytes) == [100, 10])
        #expect(seen.allSatisfy { $0.fraction == 1.0 })
    }

    @Test("a waiting reader gets each report as it comes, and the end; a cancelled reader stops waiting")
    func waitingReader() async {
        let buffer = LatestProgress()
        let stream = buffer.stream()
        let reading = Task {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        buffer.report(report(.download, 5, of: 10))
        #expect(await reading.value?.completedBytes == 5)

        let other = LatestProgress()
        let waiting = Task {
            var iterator = other.stream().makeAsyncIterator()
            return await iterator.next()
        }
        waiting.cancel()
        #expect(await waiting.value == nil)
    }
}
