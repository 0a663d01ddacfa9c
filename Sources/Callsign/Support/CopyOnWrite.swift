/// A value kept in one heap box and copied only when it is changed while shared — how
/// ``Request``, ``Response``, ``APIError`` and ``APIClient/Configuration`` stay one pointer wide.
///
/// Async frames hold every value that lives across a suspension point, and typed throws reserve
/// room for the error in each frame: with their fields boxed, the frame of each call waiting for
/// a concurrency slot stays small, and passing a request down the middleware chain copies a
/// pointer instead of a few hundred bytes and two dozen references.
struct CopyOnWrite<Value: Sendable>: Sendable {
    /// Safety: the box is written only through `value`'s modify accessor, which first copies it
    /// unless this wrapper holds the only reference. A shared box is never written, so sharing
    /// it across threads is as safe as sharing the immutable value it stands for.
    ///
    /// Its field is not checked for exclusive access at run time (two runtime calls per access,
    /// about 5 % of a call's own CPU with a dozen fields touched per call): every access goes
    /// through `value` below, whose accessors Swift checks statically on the wrapper, and a box
    /// is changed only while this wrapper alone holds it.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var value: Value
        init(_ value: Value) { self.value = value }
    }

    private var storage: Storage

    init(_ value: Value) { storage = Storage(value) }

    var value: Value {
        get { storage.value }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.value) }
            yield &storage.value
        }
    }
}
