import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The bugs of the sync and exposure pipeline review (issue 14), each through the real client.
@Suite(.serialized) struct PipelineRegressionTests {
    /// Bug 2: a client dropped without `close()` flushes its last exposures with its credentials.
    @Test func droppedClientUploadsItsLastExposuresWithCredentials() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        do {
            let client = try plane.makeClient()
            #expect(await client.ready(timeout: .seconds(5)))
            #expect(client.bool("a", default: false))
        }  // the last reference goes: deinit closes the client and flushes detached
        #expect(
            await waitUntil(seconds: 5) { plane.receivedExposures.count + plane.unauthorizedUploads > 0 },
            "no exposure upload after the client was dropped")
        #expect(plane.unauthorizedUploads == 0, "the final flush was sent without credentials")
        #expect(plane.receivedExposures.count == 1)
    }
}
