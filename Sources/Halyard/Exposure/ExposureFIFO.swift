/// A FIFO queue with amortised O(1) append and removal at the front (array plus head index).
package struct ExposureFIFO<Element> {
    /// The elements; those before ``head`` have been removed.
    private var storage: [Element] = []
    /// The index of the oldest element in ``storage``.
    private var head = 0

    /// Creates an empty queue.
    package init() {}

    /// The number of elements.
    package var count: Int { storage.count - head }
    /// Whether it is empty.
    package var isEmpty: Bool { head == storage.count }
    /// The oldest element.
    package var first: Element? { isEmpty ? nil : storage[head] }

    /// Appends at the back.
    package mutating func append(_ element: Element) { storage.append(element) }

    /// Removes and returns the oldest element.
    @discardableResult
    package mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        compactIfNeeded()
        return element
    }

    /// Removes and returns up to `n` oldest elements, oldest first.
    package mutating func popFirst(_ n: Int) -> [Element] {
        let k = min(max(n, 0), count)
        let out = Array(storage[head..<(head + k)])
        head += k
        compactIfNeeded()
        return out
    }

    /// Removes everything.
    package mutating func removeAll() {
        storage.removeAll()
        head = 0
    }

    /// Frees the removed front of ``storage``: at once when the queue is empty, else once it is
    /// at least 1,024 elements and half of the storage (amortised O(1) per removal).
    private mutating func compactIfNeeded() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 4_096)
            head = 0
        } else if head >= 1_024, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}

extension ExposureFIFO: Sendable where Element: Sendable {}
