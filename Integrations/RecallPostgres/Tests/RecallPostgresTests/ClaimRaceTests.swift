import Foundation
import PostgresNIO
import Recall
import RecallPostgres
import RecallTesting
import Testing

/// A claim's statement reads the tables as they were when it began, while its insert sees the
/// latest claim row: a claim taken just as its last holder stored and released said "nothing
/// stored" from the older view, and its process fetched again. (Found after a CI run in which
/// four processes fetched 25 times for 20 fresh URLs.)
@Suite("PostgresStorage: a claim taken while its last holder stores and releases", .postgres, .timeLimit(.minutes(2)))
struct ClaimRaceTests {
    @Test(
        "a claim whose statement began while another replica held the fetch — that replica storing and releasing before the claim's insert went on — reads patiently, never as nothing stored"
    )
    func claimOverlappingStoreAndRelease() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let holder = try await PostgresFixture.open(client)
            let claimer = try await PostgresFixture.open(client)
            #expect(await holder.claim("fetch-1", storingUnder: "k") == .claimed(then: .absent))
            // The release, begun and not committed: the claim's row stays locked until the holder's answer landed.
            let claiming = try await PostgresFixture.whileHeld(client, "DELETE FROM recall_leases WHERE name = 'fetch-1'") {
                // The claim's statement has begun (its view of the tables taken) and waits for the row.
                let claiming = Task { await claimer.claim("fetch-1", storingUnder: "k") }
                try await PostgresStorageTests.eventually {
                    try await PostgresStorageTests.waitingOnLocks(client, containing: "INSERT INTO recall_leases") == 1
                }
                await holder.write(Data("the answer".utf8), for: "k", expires: nil)
                return claiming
            }
            let claim = await claiming.value
            #expect(claim == .claimed(then: .patient), "the answer stored after the claim's view was taken may be there")
            if case .claimed(let lookup) = claim {
                #expect(await claimer.bytes(for: "k", lookup: lookup)?.data == Data("the answer".utf8))
            }
            await claimer.release("fetch-1")
            // A claim after a release that had committed, with nothing stored under its key, still
            // trusts it: a miss without a round trip (the common path keeps its saving).
            #expect(await claimer.claim("fetch-1", storingUnder: "k2") == .claimed(then: .absent))
            await claimer.release("fetch-1")
            await holder.shutdown()
            await claimer.shutdown()
        }
    }
}
