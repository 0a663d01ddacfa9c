/// A value kept in one heap box, copied only when it is changed while shared: a large value
/// held by many async frames, or passed down a long chain, costs one pointer.
struct CopyOnWrite<Value: Sendable>: Sendable {
    /// Safety: the box is written only through `value`'s modify accessor, which first copies it
    /// unless this wrapper holds the only reference. A shared box is never written, so sharing
    /// it across threads is as safe as sharing the immutable value it stands for.
    ///
    /// Its field is not checked for exclusive access at run time (two runtime calls per access,
    /// a few percent of a call's own CPU): every access goes through `value` below, whose
    /// accessors Swift checks statically on the wrapper, and a box is changed only while this
    /// wrapper alone holds it.
    private final class Box: @unchecked Sendable {
        @exclusivity(unchecked) var value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box

    init(_ value: Value) { box = Box(value) }

    var value: Value {
        _read { yield box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
            yield &box.value
        }
    }
}
