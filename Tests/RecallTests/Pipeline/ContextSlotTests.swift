import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import Testing

@Suite("ContextSlot: per-instance values in a request's context")
struct ContextSlotTests {
    private enum Shared: ContextKey { typealias Value = String }

    @Test("slots of the same type keep their values apart, beside ContextKey values, in any order of writes and removals")
    func slotsKeepApart() {
        let context = RecallContext(originalRequest: URLRequest(url: URL(string: "https://example.com")!))
        let first = ContextSlot<Int>()
        let second = ContextSlot<Int>()
        let third = ContextSlot<String>()
        #expect(context[first] == nil)
        context[first] = 1
        context[second] = 2
        context[Shared.self] = "key"
        context[third] = "three"
        #expect(context[first] == 1)
        #expect(context[second] == 2)
        #expect(context[third] == "three")
        #expect(context[Shared.self] == "key")
        // Removing the inline value and writing another slot keeps every other value.
        context[first] = nil
        #expect(context[first] == nil)
        context[second] = 20
        context[first] = 10
        #expect(context[first] == 10)
        #expect(context[second] == 20)
        #expect(context.take(second) == 20)
        #expect(context[second] == nil)
        #expect(context.take(second) == nil)
        #expect(context[third] == "three")
        #expect(context[Shared.self] == "key")
    }

    @Test("a context's events come back in the order recorded, inline or beyond, and an absent optional value reads nil")
    func eventsInOrder() {
        let context = RecallContext(originalRequest: URLRequest(url: URL(string: "https://example.com")!))
        #expect(context.events.isEmpty)
        var recorded: [RecallEvent] = []
        for number in 1...7 {
            let event: RecallEvent = number.isMultiple(of: 2) ? .cache(.evicted(count: number)) : .attemptStarted(number: number)
            context.record(event)
            recorded.append(event)
            #expect(context.events == recorded)  // (the first kept inline, the rest after it)
        }
        let optional = ContextSlot<Int?>()
        #expect(context[optional] == nil)  // nothing stored: nil, not a stored nil
        context[optional] = .some(nil)
        #expect(context[optional] == .some(nil))
    }
}
